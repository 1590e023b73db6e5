package simulator

import (
	"os/exec"
	"strings"
	"testing"
)

// deps lists what the simulator's build (tests aside) imports, directly or
// not.
func deps(t *testing.T) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the imports: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %v", deps)
	}
	return deps
}

// forbid fails t for each of deps that is one of forbidden or under one
// (a prefix ending in "/" forbids everything it starts).
func forbid(t *testing.T, deps, forbidden []string, why string) {
	t.Helper()
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f) && (strings.HasSuffix(f, "/") || strings.HasPrefix(dep, f+"/")) {
				t.Errorf("the simulator depends on %s (forbidden: %s): %s", dep, f, why)
			}
		}
	}
}

// TestEngineHasNoWeb: the simulator is an engine behind a Go API; routes,
// sockets and status codes are the web package's. Its build (tests aside)
// must not pull in an HTTP server, router or websocket package, even
// through a dependency.
func TestEngineHasNoWeb(t *testing.T) {
	forbid(t, deps(t), []string{"net/http", "github.com/go-chi/", "github.com/coder/websocket", "github.com/gorilla/websocket", "golang.org/x/net/websocket", "nhooyr.io/websocket"},
		"the web package serves the classroom")
}

// TestEngineHasNoService: the engine runs every service's classroom, so
// it links no service's client and none of the packages that hold one
// (ZooKeeper's world is zookeeper/zksim's, Redis's redis/redislock's, ...):
// a classroom of one service must not drag in another's.
func TestEngineHasNoService(t *testing.T) {
	const module = "github.com/zklockviz/zklockviz/"
	forbid(t, deps(t), []string{
		"github.com/zklockviz/zklockviz/third_party/zk", "github.com/redis/go-redis/", "go.etcd.io/etcd/", "github.com/jackc/pgx/",
		module + "zookeeper", module + "zkwatch", module + "redis", module + "etcd", module + "postgres",
	}, "a service's client belongs in its own package")
}
