package localproc_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/zklockviz/zklockviz/localproc"
)

// A port FreePorts gave is never given again in this process, even once
// it is free: a stopped server comes back on its own.
func TestFreePortsNeverTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		ports, err := localproc.FreePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d given twice", p)
			}
			seen[p] = true
			// Free, as a stopped server's port is.
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				t.Fatalf("port %d given as free: %v", p, err)
			}
			l.Close()
		}
	}
}
