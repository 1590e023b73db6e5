package history

import (
	"errors"
	"fmt"
	"os"
)

// errNotWriting marks a flush that found the store still unable to write:
// said once, when the writes began to fail, not every flush.
var errNotWriting = errors.New("history: still not writing")

// lost handles a failed write (a full disk, a directory made read-only):
// the segment is cut back to its last whole frame and closed, and what is
// buffered is dropped from now on, since the segment's encoder ran on
// through the lost frame (its strings and times). Record says err until a
// flush manages to start a new segment (retryWrite). Called with mu held.
func (s *Store) lost(err error) error {
	seg := s.segs[len(s.segs)-1]
	if terr := s.cur.Truncate(seg.size); terr != nil {
		s.opts.Logger.Error("history: cut back a segment after a failed write", "segment", seg.path, "err", terr)
	}
	s.cur.Close()
	s.cur = nil
	if !s.retrying {
		s.failedSince = s.lastWritten
		if s.failedSince.IsZero() {
			s.failedSince = seg.start
		}
		s.opts.Logger.Error("history: not recording; retrying", "err", err)
	}
	s.writeErr = err
	return err
}

// retryWrite tries to go on after lost writes: a new segment with a
// keyframe of every lock as it is now, then a gap for each from when the
// writes began to fail. When that fails too, the new segment is removed
// and the store keeps saying why. Called with mu held.
func (s *Store) retryWrite() error {
	n, why := len(s.segs), s.writeErr
	now := s.opts.Now()
	s.writeErr, s.retrying = nil, true
	defer func() { s.retrying = false }()
	err := s.newSegment(now)
	if err == nil {
		for _, key := range s.lockKeys() {
			s.append(key, Event{Time: s.segs[n].start, Kind: Gap, Since: s.failedSince, Message: "not recording: " + why.Error()})
		}
		err = s.writeFrame(true)
	}
	if err == nil {
		s.opts.Logger.Info("history: recording again", "offSince", s.failedSince)
		return nil
	}
	if len(s.segs) > n {
		if s.cur != nil {
			s.cur.Close()
			s.cur = nil
		}
		if rerr := os.Remove(s.segs[n].path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			s.opts.Logger.Error("history: remove a segment that could not be written", "segment", s.segs[n].path, "err", rerr)
		}
		s.segs = s.segs[:n]
	}
	s.enc.frame()
	s.writeErr = why
	return fmt.Errorf("%w: %w", errNotWriting, why)
}
