package localproc_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/localproc"
)

// The tail keeps the last lines and a partial one; the log gets every
// complete line, prefixed.
func TestOutputTail(t *testing.T) {
	const tailLines = 40
	var log bytes.Buffer
	o := localproc.NewOutput(&log, "zk1: ")
	for i := range tailLines + 5 {
		io.WriteString(o, strings.Repeat("x", i%3)+"line\n")
	}
	io.WriteString(o, "partial")
	if got := strings.Count(o.String(), "\n"); got != tailLines {
		t.Errorf("tail has %d newlines, want %d", got, tailLines)
	}
	if !strings.HasSuffix(o.String(), "partial") {
		t.Errorf("tail lost the partial line: %q", o.String())
	}
	if got := strings.Count(log.String(), "zk1: "); got != tailLines+5 {
		t.Errorf("log got %d prefixed lines, want %d", got, tailLines+5)
	}
}
