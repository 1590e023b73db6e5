package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// getChildren reads data and Stat of the named children, readParallel at a
// time (go-zookeeper pipelines concurrent requests on its one connection).
// Children deleted meanwhile are left out.
func getChildren(ctx context.Context, r Reader, parent string, names []string) (map[string]lockqueue.Child, error) {
	out := make(map[string]lockqueue.Child, len(names))
	if len(names) == 1 {
		// The usual change, one new node: no workers for it.
		c, ok, err := getChild(r, parent, names[0])
		if err != nil {
			return out, err
		}
		if ok {
			out[c.Name] = c
		}
		return out, ctx.Err()
	}
	if len(names) == 0 {
		return out, nil
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	ch := make(chan string)
	for range min(readParallel, len(names)) {
		wg.Go(func() {
			for n := range ch {
				c, ok, err := getChild(r, parent, n)
				mu.Lock()
				if ok {
					out[n] = c
				} else if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	feedNames(ctx, ch, names, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil
	})
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return out, firstErr
}

// feedNames sends names to the workers until one failed or ctx is done,
// then closes ch.
func feedNames(ctx context.Context, ch chan<- string, names []string, failed func() bool) {
	defer close(ch)
	for _, n := range names {
		if failed() {
			return
		}
		select {
		case ch <- n:
		case <-ctx.Done():
			return
		}
	}
}

// getChild reads one child; ok is false, with no error, when it was
// deleted since its listing.
func getChild(r Reader, parent, name string) (c lockqueue.Child, ok bool, err error) {
	p := join(parent, name)
	data, st, err := r.Get(p)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return c, false, nil
	case err != nil:
		return c, false, fmt.Errorf("data of %s: %w", p, err)
	}
	return lockqueue.Child{Name: name, Data: data, Czxid: st.Czxid,
		Ctime: time.UnixMilli(st.Ctime), EphemeralOwner: st.EphemeralOwner}, true, nil
}
