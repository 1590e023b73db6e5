package zk

// This file is zklockviz's addition to go-zookeeper v1.0.4 (see
// README.zklockviz.md): persistent watches, which ZooKeeper 3.6 added and
// go-zookeeper does not have yet (go-zookeeper/zk#155).

const (
	opRemoveWatches = 18
	opAddWatch      = 106
)

// AddWatchMode is the kind of persistent watch AddWatch sets.
type AddWatchMode int32

const (
	// AddWatchModePersistent fires for the node's own data and children
	// changes and stays set.
	AddWatchModePersistent AddWatchMode = 0
	// AddWatchModePersistentRecursive fires NodeCreated, NodeDeleted and
	// NodeDataChanged for the node and every node below it, each event
	// naming the node that changed, and stays set.
	AddWatchModePersistentRecursive AddWatchMode = 1
)

// WatcherType says which of its watches on a path RemoveWatches removes.
// ZooKeeper 3.6 to 3.8 know only these three; Any includes persistent
// watches.
type WatcherType int32

const (
	WatcherTypeChildren WatcherType = 1
	WatcherTypeData     WatcherType = 2
	WatcherTypeAny      WatcherType = 3
)

type addWatchRequest struct {
	Path string
	Mode int32
}

type removeWatchesRequest struct {
	Path string
	Type int32
}

type emptyResponse struct{}

// AddWatch sets a persistent watch on path (which need not exist). Its
// events do not come on a channel of their own: they reach the connection's
// event callback (WithEventCallback) and event channel, in the order the
// server sent them. The watch is the server's for this connection: after a
// reconnect it is gone, and the caller sets it again. A server older than
// 3.6 answers with an error ("unknown error: -6", unimplemented).
func (c *Conn) AddWatch(path string, mode AddWatchMode) error {
	if err := validatePath(path, false); err != nil {
		return err
	}
	_, err := c.request(opAddWatch, &addWatchRequest{Path: path, Mode: int32(mode)}, &emptyResponse{}, nil)
	return err
}

// RemoveWatches asks the server to drop this connection's watches of type t
// on path (ZooKeeper 3.5+). It is about the
// server's watch table only: channels from the *W methods stay open.
func (c *Conn) RemoveWatches(path string, t WatcherType) error {
	if err := validatePath(path, false); err != nil {
		return err
	}
	_, err := c.request(opRemoveWatches, &removeWatchesRequest{Path: path, Type: int32(t)}, &emptyResponse{}, nil)
	return err
}
