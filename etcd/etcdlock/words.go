package etcdlock

import (
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Words are how the pages word an etcd lock: etcdctl's and
// concurrency.Mutex's client is the key's lease, one column, and the order
// is the key's create revision.
func Words() *lockservice.Words {
	legend := append(lockservice.ModeItems(lockqueue.Read, lockqueue.Write, lockqueue.Exclusive), lockservice.Holding, lockservice.RuleArrow)
	return &lockservice.Words{
		Legend:  legend,
		Columns: lockservice.Columns{Order: "create revision", Lease: "lease"},
		Missing: "free: no keys under the prefix",
	}
}
