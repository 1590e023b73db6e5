package lockservice_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/zklockviz/zklockviz/"

// deps lists what pkg's build (tests aside) imports, directly or not.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the imports: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", module+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestSeamImports: the seam holds only if the web layer reaches lock
// services through lockservice alone, and lockservice stays a small
// package of interfaces over the model. A service's packages (zkwatch,
// simulator, and those under zookeeper/, redis/, etcd/ and postgres/)
// may appear in cmd's imports, never in web's. A service links no other
// service's client.
func TestSeamImports(t *testing.T) {
	noZooKeeper := []string{"zookeeper", "zkwatch", "github.com/zklockviz/zklockviz/third_party/zk"}
	for _, tc := range []struct {
		pkg       string
		forbidden []string
		only      []string // when set, the module packages it may import
	}{
		{pkg: "web", forbidden: []string{"zkwatch", "simulator", "zookeeper", "redis", "etcd", "postgres", "github.com/zklockviz/zklockviz/third_party/zk", "go.etcd.io/etcd", "github.com/redis/go-redis"}},
		{pkg: "lockservice", only: []string{"lockqueue", "lockservice"}},
		// Each service's classroom runs on the simulator, which links no
		// service's client; none of them links ZooKeeper's.
		{pkg: "simulator", forbidden: noZooKeeper},
		{pkg: "redis/redislock", forbidden: noZooKeeper},
		{pkg: "redis/redislocal", forbidden: noZooKeeper},
		{pkg: "etcd/etcdlock", forbidden: noZooKeeper},
		{pkg: "etcd/etcdlocal", forbidden: noZooKeeper},
		{pkg: "postgres/pglock", forbidden: noZooKeeper},
		{pkg: "postgres/pglocal", forbidden: noZooKeeper},
		// Imports between the folders run one way: zookeeper/ may import
		// zkwatch, never zkwatch zookeeper/.
		{pkg: "zkwatch", forbidden: []string{"zookeeper"}},
	} {
		for _, dep := range deps(t, tc.pkg) {
			name, ours := strings.CutPrefix(dep, module)
			for _, f := range tc.forbidden {
				if name == f || dep == f || strings.HasPrefix(dep, f+"/") || strings.HasPrefix(name, f+"/") {
					t.Errorf("%s depends on %s", tc.pkg, dep)
				}
			}
			if ours && tc.only != nil && !slices.Contains(tc.only, name) {
				t.Errorf("%s depends on %s; it may import only %v of this module", tc.pkg, dep, tc.only)
			}
		}
	}
}
