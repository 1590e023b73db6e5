package localproc

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

// Output receives a child's stdout and stderr. It forwards complete lines to
// an optional log writer and keeps the last few so a failed start can say why
// the child died. Its memory is bounded however much the child prints.
type Output struct {
	prefix string

	mu      sync.Mutex
	log     io.Writer // nil: discard
	partial []byte
	tail    []string
}

// NewOutput returns an Output that copies each line, prefixed, to log (nil
// discards).
func NewOutput(log io.Writer, prefix string) *Output {
	return &Output{log: log, prefix: prefix}
}

func (o *Output) Write(b []byte) (int, error) {
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

func (o *Output) addLine(line string) {
	line = strings.TrimRight(line, "\r")
	if len(o.tail) == tailLines {
		copy(o.tail, o.tail[1:])
		o.tail = o.tail[:tailLines-1]
	}
	o.tail = append(o.tail, line)
	if o.log != nil {
		// A broken log writer must never stall the child's output pipe.
		_, _ = io.WriteString(o.log, o.prefix+line+"\n")
	}
}

// Reset forgets the previous run's lines so errors only show the current one.
func (o *Output) Reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tail = nil
	o.partial = nil
}

// String returns the last lines captured.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := strings.Join(o.tail, "\n")
	if len(o.partial) > 0 {
		s += "\n" + string(o.partial)
	}
	return s
}

// SyncWriter makes one writer safe for several children's Outputs at once
// (five Redis masters logging to the same place).
type SyncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewSyncWriter wraps w; nil stays nil so Output discards.
func NewSyncWriter(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return &SyncWriter{w: w}
}

func (s *SyncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
