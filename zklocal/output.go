package zklocal

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

const (
	tailLines   = 40
	maxLineSize = 64 << 10
)

// syncWriter serialises writes from several JVM output pipes (ensemble
// members) into one user-supplied writer, line by line.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) writeLine(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A broken log writer must never stall the JVM's stdout pipe.
	_, _ = io.WriteString(s.w, line)
}

// output receives the JVM's stdout and stderr. It forwards complete lines to
// the user's log writer and keeps the last few lines so startup failures can
// say why the JVM died.
type output struct {
	prefix string
	log    *syncWriter // nil: discard

	mu      sync.Mutex
	partial []byte
	tail    []string
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, b...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.addLine(string(o.partial[:i]))
		o.partial = o.partial[i+1:]
	}
	if len(o.partial) > maxLineSize {
		o.addLine(string(o.partial))
		o.partial = nil
	}
	return len(b), nil
}

func (o *output) addLine(line string) {
	line = strings.TrimRight(line, "\r")
	if len(o.tail) == tailLines {
		copy(o.tail, o.tail[1:])
		o.tail = o.tail[:tailLines-1]
	}
	o.tail = append(o.tail, line)
	if o.log != nil {
		o.log.writeLine(o.prefix + line + "\n")
	}
}

// reset forgets the previous run's lines so errors only show the current one.
func (o *output) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tail = nil
	o.partial = nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := strings.Join(o.tail, "\n")
	if len(o.partial) > 0 {
		s += "\n" + string(o.partial)
	}
	return s
}
