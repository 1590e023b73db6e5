package views

import (
	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/postgres/pglock"
	"github.com/zklockviz/zklockviz/redis/redislock"
	"github.com/zklockviz/zklockviz/zookeeper"
)

// The tests word each service's locks with the words its own package
// supplies, as the server does (web's serviceView); views imports none of
// them.
var (
	zooKeeper   = NewService(zookeeper.Service(nil, nil))
	allServices = []Service{zooKeeper, NewService(redislock.Service(nil, nil)), NewService(etcdlock.Service(nil)), NewService(pglock.Service(nil))}
)

// serviceNamed is the service named name ("" the default), a service
// with the neutral words when no package supplies one.
func serviceNamed(name string) Service {
	for _, s := range allServices {
		if s.Name == name || name == "" && s.Default {
			return s
		}
	}
	return NewService(lockservice.Service{Name: name})
}
