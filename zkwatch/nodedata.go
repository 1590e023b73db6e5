package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// getChildren reads data and Stat of the named children: with multiRead,
// dataBatch children a request, or on a server without it (before 3.6)
// readParallel at a time (go-zookeeper pipelines concurrent requests on
// its one connection). Children deleted meanwhile are left out.
func getChildren(ctx context.Context, r Reader, parent string, names []string) (map[string]lockqueue.Child, error) {
	if len(names) > 1 {
		out, err := multiGetChildren(ctx, r, parent, names)
		if !errors.Is(err, zk.ErrMultiReadUnimplemented) {
			return out, err
		}
	}
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

// dataBatch is how many children's data one multiRead reads. A request
// costs the server about as much whatever it carries, so a first read of
// a fleet's locks (a holder and a waiter each) takes half the requests,
// and of a 100,000-node queue a thousandth. Lock nodes hold a few bytes
// (an address, an id): 256 of them answer in tens of KB, well inside the
// 16 MiB the connection accepts.
const dataBatch = 256

// multiGetChildren is getChildren with multiRead.
func multiGetChildren(ctx context.Context, r Reader, parent string, names []string) (map[string]lockqueue.Child, error) {
	out := make(map[string]lockqueue.Child, len(names))
	ops := make([]zk.ReadOp, 0, min(len(names), dataBatch))
	for i := 0; i < len(names); i += dataBatch {
		batch := names[i:min(len(names), i+dataBatch)]
		ops = appendDataOps(ops[:0], parent, batch)
		res, err := r.MultiRead(ops...)
		if err != nil {
			return out, err
		}
		if err := addChildren(out, batch, ops, res); err != nil {
			return out, err
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// appendDataOps appends to ops a data read of each of parent's children
// names.
func appendDataOps(ops []zk.ReadOp, parent string, names []string) []zk.ReadOp {
	for _, n := range names {
		ops = append(ops, zk.GetDataOp(join(parent, n)))
	}
	return ops
}

// addChildren adds to out the children names as a multiRead of ops read
// them (res[j] is names[j]'s); one deleted since it was listed or told of
// is left out.
func addChildren(out map[string]lockqueue.Child, names []string, ops []zk.ReadOp, res []zk.ReadResult) error {
	for j, name := range names {
		switch rr := res[j]; {
		case errors.Is(rr.Error, zk.ErrNoNode):
			continue
		case rr.Error != nil:
			return fmt.Errorf("data of %s: %w", ops[j].Path, rr.Error)
		default:
			out[name] = childOf(name, rr.Data, rr.Stat)
		}
	}
	return nil
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
	return childOf(name, data, st), true, nil
}

// childOf is the child name as read: its data and Stat.
func childOf(name string, data []byte, st *zk.Stat) lockqueue.Child {
	return lockqueue.Child{Name: name, Data: data, Czxid: st.Czxid, Ctime: time.UnixMilli(st.Ctime), EphemeralOwner: st.EphemeralOwner}
}
