package localproc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zklockviz/zklockviz/localproc"
)

// fake fails its first failures starts with failWith.
type fake struct {
	n        *int
	failures int
	failWith error
	closed   bool
}

func (f *fake) Start(context.Context) error {
	*f.n++
	if *f.n <= f.failures {
		return f.failWith
	}
	return nil
}

func (f *fake) Close() error { f.closed = true; return nil }

func TestLaunchRetries(t *testing.T) {
	portErr := fmt.Errorf("redis 127.0.0.1:1 exited during startup: %w", localproc.ErrPortInUse)
	other := errors.New("bad config")
	for _, tc := range []struct {
		name      string
		failures  int
		failWith  error
		wantTries int
		wantErr   error
	}{
		{"first try", 0, nil, 1, nil},
		{"port taken once", 1, portErr, 2, nil},
		{"port taken every time", 10, portErr, 3, localproc.ErrPortInUse},
		{"other errors are not retried", 10, other, 1, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tries := 0
			var made []*fake
			_, err := localproc.Launch(context.Background(), func(context.Context) (*fake, error) {
				f := &fake{n: &tries, failures: tc.failures, failWith: tc.failWith}
				made = append(made, f)
				return f, nil
			})
			if tries != tc.wantTries {
				t.Errorf("%d tries, want %d", tries, tc.wantTries)
			}
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err %v, want %v", err, tc.wantErr)
			}
			for i, f := range made {
				if failed := i < tc.failures; f.closed != failed {
					t.Errorf("server %d: closed %v, want %v (close exactly the failed ones)", i, f.closed, failed)
				}
			}
		})
	}
}
