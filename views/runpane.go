package views

import (
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// nodeOf is node name of the first of locks that has it; nil if none has.
func nodeOf(locks []lockqueue.Snapshot, name string) *lockqueue.Node {
	for i := range locks {
		for j := range locks[i].Nodes {
			if name != "" && locks[i].Nodes[j].Name == name {
				return &locks[i].Nodes[j]
			}
		}
	}
	return nil
}

// watches are what n's session watches, named within the lock at path.
func watches(n *lockqueue.Node, path string) string {
	out := make([]string, len(n.Watching))
	for i, p := range n.Watching {
		out[i] = strings.Replace(p, path+"/", "", 1)
	}
	return strings.Join(out, ", ")
}
