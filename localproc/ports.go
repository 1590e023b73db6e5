package localproc

import (
	"fmt"
	"net"
	"sync"
)

// handed are the ports FreePorts gave this process, never given twice: a
// server stopped for a restart comes back on its own port, which another
// server of this process must not have taken meanwhile (a redis-server that
// did answered the restarted one's readiness check, and the restarted one,
// which had exited on "Address already in use", was found gone steps later).
var handed = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePorts returns n distinct free loopback ports that it has not given
// before. They are only free at the moment of the call: Launch retries on
// ErrPortInUse.
func FreePorts(n int) ([]int, error) {
	handed.Lock()
	defer handed.Unlock()
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	// Each listener stays open until the end, so the kernel does not
	// offer its port again; a few hundred tries find n new ones.
	for try := 0; len(ports) < n; try++ {
		if try >= 100+10*n {
			return nil, fmt.Errorf("localproc: find %d free ports: every port offered was given before", n)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("localproc: find free port: %w", err)
		}
		listeners = append(listeners, l)
		if p := l.Addr().(*net.TCPAddr).Port; !handed.ports[p] {
			ports = append(ports, p)
		}
	}
	for _, p := range ports {
		handed.ports[p] = true
	}
	return ports, nil
}
