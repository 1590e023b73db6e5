package history

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
	"unsafe"
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
var kinds = []Kind{"", keyframe, Queued, Acquired, Unheld, Left, WaitsFor, Watch, Zombie, AlertRaised, AlertCleared, Connection, Exists, Recipe, Gap, Who, Leases, Invisible, Anonymous}

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
	// Who a node is (Queued only); a segment written before they were
	// added has none of these bits, and reads as it did.
	fData
	fDataBinary
	fLabel
	fLease
	// The folder a Queued node lives in (a semaphore's leases/ and
	// locks/); a segment written before has none.
	fFolder
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

// frameHead is the room kept at the start of an encoder's buffer for the
// frame's header (the body's length and checksum): a frame is written from
// the buffer itself, where a copy of a big queue's restatement (tens of
// MB in one frame) doubled it.
const frameHead = binary.MaxVarintLen64 + 4

// bigFrame: a buffer grown past this by one big frame is let go once the
// frame is made instead of kept, empty, for the segment's life.
const bigFrame = 4 << 20

// buffered is the bytes of records not yet made into a frame.
func (e *encoder) buffered() int { return max(len(e.buf)-frameHead, 0) }

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

// lastField is the highest field bit; fields are written from fNode up.
const lastField = fFolder

// stringField is ev's string field of bit, nil for the other fields.
func stringField(ev *Event, bit uint64) *string {
	switch bit {
	case fNode:
		return &ev.Node
	case fMode:
		return &ev.Mode
	case fClient:
		return &ev.Client
	case fPartOf:
		return &ev.PartOf
	case fHow:
		return (*string)(&ev.How)
	case fTo:
		return &ev.To
	case fSource:
		return &ev.Source
	case fEdge:
		return &ev.Edge
	case fAlert:
		return &ev.Alert
	case fMessage:
		return &ev.Message
	case fConnection:
		return &ev.Connection
	case fValue:
		return &ev.Value
	case fData:
		return &ev.Data
	case fLabel:
		return &ev.Label
	case fLease:
		return &ev.Lease
	case fFolder:
		return &ev.Folder
	}
	return nil
}

// timeField is ev's time field of bit (Since or Acquired), nil for the
// other fields.
func timeField(ev *Event, bit uint64) *time.Time {
	switch bit {
	case fSince:
		return &ev.Since
	case fAcquired:
		return &ev.Acquired
	}
	return nil
}

// fieldMask has the bit of every field ev has a value for.
func fieldMask(ev *Event) uint64 {
	var mask uint64
	for bit := uint64(1); bit <= lastField; bit <<= 1 {
		var on bool
		switch {
		case bit == fSeq:
			on = ev.Seq != 0
		case bit == fForeign:
			on = ev.Foreign
		case bit == fDataBinary:
			on = ev.DataBinary
		case bit == fNodes:
			on = len(ev.Nodes) > 0
		case timeField(ev, bit) != nil:
			on = !timeField(ev, bit).IsZero()
		default:
			on = *stringField(ev, bit) != ""
		}
		if on {
			mask |= bit
		}
	}
	return mask
}

// event appends one event record of lock.
func (e *encoder) event(lock string, ev Event) {
	if len(e.buf) == 0 {
		e.buf = append(e.buf, make([]byte, frameHead)...)
	}
	e.scratch = e.scratch[:0]
	// Strings first: their definitions must precede the record using them.
	e.str(lock)
	ms := ev.Time.UnixMilli()
	e.scratch = binary.AppendVarint(e.scratch, ms-e.last)
	e.last = ms
	mask := fieldMask(&ev)
	e.scratch = binary.AppendUvarint(e.scratch, mask)
	for bit := uint64(1); bit <= lastField; bit <<= 1 {
		if mask&bit == 0 {
			continue
		}
		switch {
		case bit == fForeign, bit == fDataBinary: // the bit is the value
		case bit == fSeq:
			e.scratch = binary.AppendVarint(e.scratch, ev.Seq)
		case bit == fNodes:
			e.scratch = binary.AppendUvarint(e.scratch, uint64(len(ev.Nodes)))
			for _, n := range ev.Nodes {
				e.str(n)
			}
		case timeField(&ev, bit) != nil:
			e.scratch = binary.AppendVarint(e.scratch, ms-timeField(&ev, bit).UnixMilli())
		default:
			e.str(*stringField(&ev, bit))
		}
	}
	head := kindCode[ev.Kind] << 1
	if ev.Synthetic {
		head |= 1
	}
	e.buf = binary.AppendUvarint(e.buf, head)
	e.buf = append(e.buf, e.scratch...)
}

// frame returns the buffered records as one frame and empties the buffer.
// The frame shares the buffer's memory: it is good until the next event.
func (e *encoder) frame() []byte {
	if e.buffered() == 0 {
		return nil
	}
	body := e.buf[frameHead:]
	var head [frameHead]byte
	h := binary.AppendUvarint(head[:0], uint64(len(body)))
	h = binary.LittleEndian.AppendUint32(h, crc32.Checksum(body, crcTable))
	start := frameHead - len(h)
	copy(e.buf[start:], h)
	out := e.buf[start:]
	if cap(e.buf) > bigFrame {
		e.buf = nil
	} else {
		e.buf = e.buf[:0]
	}
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
	// stringBytes is what the string definitions read so far hold: the
	// records share them, so a cached segment costs them once.
	stringBytes int64
	// defined counts the string definitions read so far. A reader given
	// a kept segment's whole table (keptSegment.each) finds each
	// definition already in it and skips it.
	defined int
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
	err := d.each(func(r *record) error {
		out = append(out, *r)
		return nil
	})
	return out, err
}

// each reads one frame and calls fn with each of its records, one at a
// time: a keyframe of a big queue is one frame of hundreds of thousands of
// records, which a query reads without holding them all. An error from fn
// stops the reading and is returned. io.EOF at a clean end; errCorrupt
// for a torn or damaged frame.
func (d *segmentReader) each(fn func(*record) error) error {
	_, err := d.frame(fn)
	return err
}

// frame is each, returning the frame's payload, for a reader that keeps
// the segment (keptSegment).
func (d *segmentReader) frame(fn func(*record) error) ([]byte, error) {
	n, err := binary.ReadUvarint(d.r)
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil || n > 1<<30 {
		return nil, errCorrupt
	}
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(d.r, hdr); err != nil {
		return nil, errCorrupt
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(d.r, payload); err != nil {
		return nil, errCorrupt
	}
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(hdr) {
		return nil, errCorrupt
	}
	if err := d.records(payload, fn); err != nil {
		return nil, err
	}
	d.good += int64(uvarintLen(n)) + 4 + int64(n)
	return payload, nil
}

// keptSegment is a segment held in memory for queries: its frames'
// payloads as written, checked when they were read, and its string table.
// Walking it decodes each record again into one record per walk, which
// allocates nothing but an event's Nodes. A 100,000-node queue's keyframe
// decoded into records was about 80 MB; kept as frames and strings it is
// the file's size and its strings, and two such segments fit the cache.
type keptSegment struct {
	start    int64 // ms: the first record's time is relative to it
	payloads [][]byte
	strings  []string
	bytes    int64
}

// add keeps payload, one more frame of d's segment, and counts what the
// segment now holds in memory.
func (k *keptSegment) add(payload []byte, d *segmentReader) {
	k.payloads = append(k.payloads, payload)
	k.strings = d.strings
	k.bytes += int64(len(payload)) + int64(unsafe.Sizeof(payload))
}

// held is what k holds in memory, its strings included.
func (k *keptSegment) held(d *segmentReader) int64 {
	return k.bytes + d.stringBytes + int64(len(d.strings))*int64(unsafe.Sizeof(""))
}

// each calls fn with each record of k, in order, decoded into one record:
// fn keeps a copy if it keeps one. An error from fn stops the walk and is
// returned.
func (k *keptSegment) each(fn func(*record) error) error {
	d := segmentReader{strings: k.strings, last: k.start}
	for _, p := range k.payloads {
		if err := d.records(p, fn); err != nil {
			return err
		}
	}
	return nil
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

// records decodes one frame's payload b, calling fn with each of its
// events and keeping its string definitions for the frames after it.
func (d *segmentReader) records(b []byte, fn func(*record) error) error {
	p := &payloadReader{b: b}
	// One record for the frame, decoded into again for each event: fn
	// gets it by pointer, so a record made per event was one allocation
	// per event (most of what reading a big queue's keyframe cost). fn
	// keeps a copy if it keeps one.
	var r record
	for len(p.b) > 0 && p.err == nil {
		head := p.uvarint()
		if head == 0 {
			n := p.uvarint()
			if n > uint64(len(p.b)) {
				return errCorrupt
			}
			if d.defined == len(d.strings) {
				d.strings = append(d.strings, string(p.b[:n]))
				d.stringBytes += int64(n)
			}
			d.defined++
			p.b = p.b[n:]
			continue
		}
		if err := d.event(p, head, &r); err != nil {
			return err
		}
		if p.err == nil {
			if err := fn(&r); err != nil {
				return err
			}
		}
	}
	return p.err
}

// str reads a string id and looks it up among the segment's definitions.
func (d *segmentReader) str(p *payloadReader) string {
	id := p.uvarint()
	if id >= uint64(len(d.strings)) {
		p.err = errCorrupt
		return ""
	}
	return d.strings[id]
}

// event decodes the event record whose head (kind and synthetic bit) p has
// just read.
func (d *segmentReader) event(p *payloadReader, head uint64, r *record) error {
	code := head >> 1
	if code >= uint64(len(kinds)) {
		return errCorrupt
	}
	*r = record{}
	r.Kind, r.Synthetic = kinds[code], head&1 == 1
	r.Lock = d.str(p)
	ms := d.last + p.varint()
	d.last = ms
	r.Time = time.UnixMilli(ms).UTC()
	mask := p.uvarint()
	for bit := uint64(1); bit <= lastField; bit <<= 1 {
		if mask&bit == 0 {
			continue
		}
		switch {
		case bit == fForeign:
			r.Foreign = true
		case bit == fDataBinary:
			r.DataBinary = true
		case bit == fSeq:
			r.Seq = p.varint()
		case bit == fNodes:
			n := p.uvarint()
			if n > uint64(len(p.b)) {
				return errCorrupt
			}
			r.Nodes = make([]string, n)
			for i := range r.Nodes {
				r.Nodes[i] = d.str(p)
			}
		case timeField(&r.Event, bit) != nil:
			*timeField(&r.Event, bit) = time.UnixMilli(ms - p.varint()).UTC()
		default:
			*stringField(&r.Event, bit) = d.str(p)
		}
	}
	return nil
}
