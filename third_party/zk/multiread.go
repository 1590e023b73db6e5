package zk

// This file is zklockviz's addition to go-zookeeper v1.0.4 (see
// README.zklockviz.md): multiRead, which ZooKeeper 3.6 added and
// go-zookeeper does not have. One request carries many getChildren and
// getData reads; the server answers each on its own, so one path that is
// gone (NoNode) does not fail the others, as it would fail a multi.
//
// The wire format is the multi's (MultiOperationRecord and MultiResponse in
// ZooKeeper's jute): each op is a MultiHeader {type, done=false, err=-1}
// and its request record, ended by a header {-1, true, -1}. The answer is a
// header per op, whose type is the op's (getChildren: a vector of names;
// getData: data and a Stat) or -1 with the error (an int), ended likewise.

import (
	"errors"
	"fmt"
	"reflect"
)

const opMultiRead = 22

// ErrMultiReadUnimplemented is MultiRead's error from a server that has no
// multiRead (before 3.6): the caller reads one path a request instead.
var ErrMultiReadUnimplemented = errors.New("zk: the server has no multiRead (ZooKeeper before 3.6)")

// ReadOp is one read of a MultiRead: GetChildrenOp or GetDataOp.
type ReadOp struct {
	Path string
	Data bool // getData; getChildren when false
}

// GetChildrenOp lists the children of path. Its result has no Stat:
// ZooKeeper's multiRead answers a getChildren with the names only.
func GetChildrenOp(path string) ReadOp { return ReadOp{Path: path} }

// GetDataOp reads the data and Stat of path.
func GetDataOp(path string) ReadOp { return ReadOp{Path: path, Data: true} }

// ReadResult is the answer to one ReadOp: Children for a getChildren, Data
// and Stat for a getData, or Error (ErrNoNode, ErrNoAuth, ...) alone.
type ReadResult struct {
	Children []string
	Data     []byte
	Stat     *Stat
	Error    error
}

type multiReadResponse struct {
	Results []ReadResult
}

// Decode reads a MultiResponse of reads. An op's error is its result's,
// not the call's.
func (r *multiReadResponse) Decode(buf []byte) (int, error) {
	total := 0
	for {
		var header multiHeader
		n, err := decodePacketValue(buf[total:], reflect.ValueOf(&header))
		if err != nil {
			return total, err
		}
		total += n
		if header.Done {
			return total, nil
		}
		var res ReadResult
		var into reflect.Value
		var code ErrCode
		var children getChildrenResponse
		var data getDataResponse
		switch header.Type {
		case opError:
			into = reflect.ValueOf(&code)
		case opGetChildren:
			into = reflect.ValueOf(&children)
		case opGetData:
			into = reflect.ValueOf(&data)
		default:
			return total, fmt.Errorf("zk: multiRead answered an op of type %d", header.Type)
		}
		n, err = decodePacketValue(buf[total:], into)
		if err != nil {
			return total, err
		}
		total += n
		switch header.Type {
		case opError:
			res.Error = code.toError()
		case opGetChildren:
			res.Children = children.Children
		case opGetData:
			res.Data, res.Stat = data.Data, &data.Stat
		}
		r.Results = append(r.Results, res)
	}
}

// MultiRead sends ops in one request (ZooKeeper 3.6+) and returns one result
// per op, in order. The error is the request's (the connection; a server
// older than 3.6: ErrMultiReadUnimplemented); each op's own failure is in
// its result. No watch is set. The server reads each path in
// turn, not at one point in time: a change between two ops may show in
// the second only.
func (c *Conn) MultiRead(ops ...ReadOp) ([]ReadResult, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	req := &multiRequest{Ops: make([]multiRequestOp, 0, len(ops)), DoneHeader: multiHeader{Type: -1, Done: true, Err: -1}}
	for _, op := range ops {
		if err := validatePath(op.Path, false); err != nil {
			return nil, fmt.Errorf("zk: multiRead %s: %w", op.Path, err)
		}
		code := int32(opGetChildren)
		if op.Data {
			code = opGetData
		}
		// GetChildrenRequest and GetDataRequest are both {path, watch}.
		req.Ops = append(req.Ops, multiRequestOp{multiHeader{code, false, -1}, &pathWatchRequest{Path: op.Path}})
	}
	res := &multiReadResponse{}
	var code ErrCode
	// Called on the receive loop before request returns.
	keepCode := func(_ *request, h *responseHeader, _ error) { code = h.Err }
	if _, err := c.request(opMultiRead, req, res, keepCode); err != nil {
		if code == errUnimplemented {
			return nil, ErrMultiReadUnimplemented
		}
		return nil, err
	}
	if len(res.Results) != len(ops) {
		return nil, errors.New("zk: multiRead answered " + fmt.Sprint(len(res.Results)) + " results for " + fmt.Sprint(len(ops)) + " ops")
	}
	return res.Results, nil
}
