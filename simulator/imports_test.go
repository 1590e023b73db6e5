package simulator

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineHasNoWeb: the simulator is an engine behind a Go API; routes,
// sockets and status codes are the web package's. Its build (tests aside)
// must not pull in an HTTP server, router or websocket package, even
// through a dependency.
func TestEngineHasNoWeb(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the imports: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{"net/http", "github.com/go-chi/", "github.com/coder/websocket", "github.com/gorilla/websocket", "golang.org/x/net/websocket", "nhooyr.io/websocket"}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %v", deps)
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f) && (strings.HasSuffix(f, "/") || strings.HasPrefix(dep, f+"/")) {
				t.Errorf("the simulator depends on %s (forbidden: %s)", dep, f)
			}
		}
	}
}
