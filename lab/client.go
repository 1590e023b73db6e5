package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Locker is one client's hold on a lock through its service's real recipe.
type Locker interface {
	// Acquire blocks until the client holds the lock and returns its
	// fencing token (ZooKeeper: the lock node's sequence number; etcd:
	// the key's create revision; Redis: a counter; PostgreSQL: a
	// sequence), who the server knows the holder as, named as
	// zklockviz's reader names the lock's node (ZooKeeper: the lock
	// node; Redis: the key's value; etcd: the key under the prefix, its
	// lease in hex; PostgreSQL: the backend, pid-N), and a channel closed
	// when the client learns it lost the lock before Release (its
	// session or lease ended, its TTL ran out, its connection broke).
	Acquire(ctx context.Context) (Hold, error)
	// Release lets go.
	Release() error
}

// Hold is what Acquire returns: the client holds the lock.
type Hold struct {
	Token  int64
	Holder string
	Lost   <-chan struct{}
}

// ClientConfig is one client process's part.
type ClientConfig struct {
	ID       string
	Resource string        // the resource's URL
	Hold     time.Duration // between reading the counter and writing it back
	Out      io.Writer     // the events, one JSON line each
}

// RunClient loops acquire, read, write, release until ctx ends, telling
// each step on Out. A step that fails is told and the loop goes on: the
// lab is about what clients do when things fail.
func RunClient(ctx context.Context, cfg ClientConfig, l Locker) error {
	c := client{cfg: cfg, http: &http.Client{Timeout: 5 * time.Second}}
	for ctx.Err() == nil {
		// Told before the request leaves: the server may grant it before
		// Acquire returns, and zklockviz may record the hold from then.
		c.emit(Event{Kind: Requested})
		h, err := acquire(ctx, l)
		token, lost := h.Token, h.Lost
		if err != nil {
			if ctx.Err() == nil {
				c.emit(Event{Kind: Failed, Message: "acquire: " + err.Error()})
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		c.emit(Event{Kind: Acquired, Token: token, Holder: h.Holder})
		done := make(chan struct{})
		var told sync.WaitGroup
		told.Go(func() {
			select {
			case <-lost:
				c.emit(Event{Kind: Lost, Token: token})
			case <-done:
			}
		})
		c.increment(ctx, token)
		close(done)
		told.Wait()
		// It stops believing as it lets go: the next holder may have the
		// lock before Release returns.
		at := time.Now()
		released := Event{At: at, Kind: Released, Token: token}
		if err := l.Release(); err != nil {
			// It tried to let go: whatever the server has, it no longer
			// believes it holds.
			released.Message = "release failed: " + err.Error()
		}
		c.emit(released)
	}
	return nil
}

// acquire is l.Acquire, given up as soon as ctx ends: a recipe may wait
// on a watch rather than on ctx (go-zookeeper's does), and a stopped
// client exits at once rather than when it next gets the lock. The
// abandoned Acquire ends with the process.
func acquire(ctx context.Context, l Locker) (Hold, error) {
	type result struct {
		h   Hold
		err error
	}
	got := make(chan result, 1)
	go func() {
		h, err := l.Acquire(ctx)
		got <- result{h, err}
	}()
	select {
	case r := <-got:
		return r.h, r.err
	case <-ctx.Done():
		return Hold{}, ctx.Err()
	}
}

type client struct {
	cfg  ClientConfig
	http *http.Client
	mu   sync.Mutex
}

func (c *client) emit(e Event) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.Client = c.cfg.ID
	b, _ := json.Marshal(e)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg.Out.Write(append(b, '\n'))
}

// increment reads the counter, holds, and writes it back one higher.
func (c *client) increment(ctx context.Context, token int64) {
	v, err := c.read(ctx)
	if ctx.Err() != nil {
		return // stopped: the run is over
	}
	if err != nil {
		c.emit(Event{Kind: Failed, Token: token, Message: "read: " + err.Error()})
		return
	}
	time.Sleep(c.cfg.Hold)
	// The write goes out and its answer is told even when the client is
	// stopped meanwhile (the lab's end): a write the resource took is
	// one the record has, so the counter and the writes add up.
	body, _ := json.Marshal(Write{Client: c.cfg.ID, Token: token, From: v, To: v + 1})
	req, _ := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, c.cfg.Resource, bytes.NewReader(body))
	res, err := c.http.Do(req)
	if err != nil {
		c.emit(Event{Kind: Failed, Token: token, Message: "write: " + err.Error()})
		return
	}
	defer res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
		c.emit(Event{Kind: Wrote, Token: token, From: v, To: v + 1})
	case http.StatusConflict:
		c.emit(Event{Kind: Refused, Token: token, From: v, To: v + 1})
	default:
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 256))
		c.emit(Event{Kind: Failed, Token: token, Message: fmt.Sprintf("write: %s %s", res.Status, msg)})
	}
}

func (c *client) read(ctx context.Context) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.Resource, nil)
	res, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
