package history

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// A segment file is a magic line, then frames. A frame is
//
//	uvarint(len) | crc32c(payload), 4 bytes little endian | payload
//
// and one frame is what one flush writes, so a crash tears at most the
// last frame, which reopening truncates. The payload is records:
//
//	uvarint(0) uvarint(len) bytes                a string, given the next id
//	uvarint(kind<<1|synthetic) uvarint(lock) zigzag(ms since previous record)
//	    uvarint(field mask) fields...            an event
//
// Strings (lock keys, node names, modes, clients) are interned per segment:
// a node's name is written once, then costs a byte or two per event. Times
// are milliseconds, deltas from the previous record; Since and Acquired
// are deltas from the record's own time.

const magic = "zklockviz-history 1\n"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

var errCorrupt = errors.New("history: corrupt frame")

// kinds numbers the kinds on disk; never reorder, only append.
var kinds = []Kind{"", keyframe, Queued, Acquired, Unheld, Left, WaitsFor, Watch, Zombie, AlertRaised, AlertCleared, Connection, Exists, Recipe, Gap}

var kindCode = func() map[Kind]uint64 {
	m := make(map[Kind]uint64, len(kinds))
	for i, k := range kinds {
		m[k] = uint64(i)
	}
	return m
}()

// Field bits of an event record, in the order they are written.
const (
	fNode = 1 << iota
	fMode
	fClient
	fSeq
	fForeign
	fPartOf
	fSince
	fAcquired
	fHow
	fTo
	fSource
	fEdge
	fNodes
	fAlert
	fMessage
	fConnection
	fValue
)

// encoder writes records of one segment into a buffer.
type encoder struct {
	buf     []byte
	strings map[string]uint64
	last    int64 // ms of the previous record
	scratch []byte
}

func newEncoder(start time.Time) *encoder {
	return &encoder{strings: map[string]uint64{}, last: start.UnixMilli()}
}

func (e *encoder) str(s string) {
	id, ok := e.strings[s]
	if !ok {
		id = uint64(len(e.strings))
		e.strings[s] = id
		e.buf = binary.AppendUvarint(e.buf, 0)
		e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
		e.buf = append(e.buf, s...)
	}
	e.scratch = binary.AppendUvarint(e.scratch, id)
}

// event appends one event record of lock.
func (e *encoder) event(lock string, ev Event) {
	e.scratch = e.scratch[:0]
	// Strings first: their definitions must precede the record using them.
	e.str(lock)
	ms := ev.Time.UnixMilli()
	e.scratch = binary.AppendVarint(e.scratch, ms-e.last)
	e.last = ms
	var mask uint64
	set := func(bit uint64, on bool) {
		if on {
			mask |= bit
		}
	}
	set(fNode, ev.Node != "")
	set(fMode, ev.Mode != "")
	set(fClient, ev.Client != "")
	set(fSeq, ev.Seq != 0)
	set(fForeign, ev.Foreign)
	set(fPartOf, ev.PartOf != "")
	set(fSince, !ev.Since.IsZero())
	set(fAcquired, !ev.Acquired.IsZero())
	set(fHow, ev.How != "")
	set(fTo, ev.To != "")
	set(fSource, ev.Source != "")
	set(fEdge, ev.Edge != "")
	set(fNodes, len(ev.Nodes) > 0)
	set(fAlert, ev.Alert != "")
	set(fMessage, ev.Message != "")
	set(fConnection, ev.Connection != "")
	set(fValue, ev.Value != "")
	e.scratch = binary.AppendUvarint(e.scratch, mask)
	strField := func(bit uint64, s string) {
		if mask&bit != 0 {
			e.str(s)
		}
	}
	strField(fNode, ev.Node)
	strField(fMode, ev.Mode)
	strField(fClient, ev.Client)
	if mask&fSeq != 0 {
		e.scratch = binary.AppendVarint(e.scratch, ev.Seq)
	}
	strField(fPartOf, ev.PartOf)
	if mask&fSince != 0 {
		e.scratch = binary.AppendVarint(e.scratch, ms-ev.Since.UnixMilli())
	}
	if mask&fAcquired != 0 {
		e.scratch = binary.AppendVarint(e.scratch, ms-ev.Acquired.UnixMilli())
	}
	strField(fHow, string(ev.How))
	strField(fTo, ev.To)
	strField(fSource, ev.Source)
	strField(fEdge, ev.Edge)
	if mask&fNodes != 0 {
		e.scratch = binary.AppendUvarint(e.scratch, uint64(len(ev.Nodes)))
		for _, n := range ev.Nodes {
			e.str(n)
		}
	}
	strField(fAlert, ev.Alert)
	strField(fMessage, ev.Message)
	strField(fConnection, ev.Connection)
	strField(fValue, ev.Value)
	head := kindCode[ev.Kind] << 1
	if ev.Synthetic {
		head |= 1
	}
	e.buf = binary.AppendUvarint(e.buf, head)
	e.buf = append(e.buf, e.scratch...)
}

// frame returns the buffered records as one frame and empties the buffer.
func (e *encoder) frame() []byte {
	if len(e.buf) == 0 {
		return nil
	}
	out := binary.AppendUvarint(nil, uint64(len(e.buf)))
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(e.buf, crcTable))
	out = append(out, e.buf...)
	e.buf = e.buf[:0]
	return out
}

// record is one decoded event and its lock.
type record struct {
	Lock string
	Event
}

// segmentReader reads a segment's frames and records.
type segmentReader struct {
	r       *bufio.Reader
	strings []string
	last    int64
	// good is the offset just past the last whole frame read.
	good int64
}

func newSegmentReader(r io.Reader, start time.Time) (*segmentReader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(br, head); err != nil || string(head) != magic {
		return nil, fmt.Errorf("%w: not a history segment", errCorrupt)
	}
	return &segmentReader{r: br, last: start.UnixMilli(), good: int64(len(magic))}, nil
}

// next reads one frame's records, appending to out. io.EOF at a clean end;
// errCorrupt for a torn or damaged frame.
func (d *segmentReader) next(out []record) ([]record, error) {
	n, err := binary.ReadUvarint(d.r)
	if err == io.EOF {
		return out, io.EOF
	}
	if err != nil || n > 1<<30 {
		return out, errCorrupt
	}
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(d.r, hdr); err != nil {
		return out, errCorrupt
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(d.r, payload); err != nil {
		return out, errCorrupt
	}
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(hdr) {
		return out, errCorrupt
	}
	out, err = d.records(payload, out)
	if err != nil {
		return out, err
	}
	d.good += int64(uvarintLen(n)) + 4 + int64(n)
	return out, nil
}

func uvarintLen(n uint64) int { return len(binary.AppendUvarint(nil, n)) }

// payloadReader walks one frame's payload.
type payloadReader struct {
	b   []byte
	err error
}

func (p *payloadReader) uvarint() uint64 {
	v, n := binary.Uvarint(p.b)
	if n <= 0 {
		p.err = errCorrupt
		p.b = nil
		return 0
	}
	p.b = p.b[n:]
	return v
}

// varint undoes binary.AppendVarint's zigzag encoding.
func (p *payloadReader) varint() int64 {
	u := p.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *segmentReader) records(b []byte, out []record) ([]record, error) {
	p := &payloadReader{b: b}
	str := func() string {
		id := p.uvarint()
		if id >= uint64(len(d.strings)) {
			p.err = errCorrupt
			return ""
		}
		return d.strings[id]
	}
	for len(p.b) > 0 && p.err == nil {
		head := p.uvarint()
		if head == 0 {
			n := p.uvarint()
			if n > uint64(len(p.b)) {
				return out, errCorrupt
			}
			d.strings = append(d.strings, string(p.b[:n]))
			p.b = p.b[n:]
			continue
		}
		code := head >> 1
		if code >= uint64(len(kinds)) {
			return out, errCorrupt
		}
		var r record
		r.Kind, r.Synthetic = kinds[code], head&1 == 1
		r.Lock = str()
		ms := d.last + p.varint()
		d.last = ms
		r.Time = time.UnixMilli(ms).UTC()
		mask := p.uvarint()
		strField := func(bit uint64, dst *string) {
			if mask&bit != 0 {
				*dst = str()
			}
		}
		strField(fNode, &r.Node)
		strField(fMode, &r.Mode)
		strField(fClient, &r.Client)
		if mask&fSeq != 0 {
			r.Seq = p.varint()
		}
		r.Foreign = mask&fForeign != 0
		strField(fPartOf, &r.PartOf)
		if mask&fSince != 0 {
			r.Since = time.UnixMilli(ms - p.varint()).UTC()
		}
		if mask&fAcquired != 0 {
			r.Acquired = time.UnixMilli(ms - p.varint()).UTC()
		}
		var how string
		strField(fHow, &how)
		r.How = How(how)
		strField(fTo, &r.To)
		strField(fSource, &r.Source)
		strField(fEdge, &r.Edge)
		if mask&fNodes != 0 {
			n := p.uvarint()
			if n > uint64(len(p.b)) {
				return out, errCorrupt
			}
			r.Nodes = make([]string, n)
			for i := range r.Nodes {
				r.Nodes[i] = str()
			}
		}
		strField(fAlert, &r.Alert)
		strField(fMessage, &r.Message)
		strField(fConnection, &r.Connection)
		strField(fValue, &r.Value)
		if p.err == nil {
			out = append(out, r)
		}
	}
	if p.err != nil {
		return out, p.err
	}
	return out, nil
}
