// Package pglock is PostgreSQL behind the lock-service seam: a read-only
// live reader of advisory locks and row locks, polling pg_locks joined with
// pg_stat_activity and pg_blocking_pids once per interval for every watched
// lock together.
//
// Lock names:
//
//	advisory/42         pg_advisory_lock(42): one bigint key (may be negative)
//	advisory/1/2        pg_advisory_lock(1, 2): two int4 keys
//	table/public.orders row locks (SELECT … FOR UPDATE/SHARE, UPDATE, DELETE)
//	                    on the table, seen through their waiters
//
// Advisory locks belong to a database: a name means the lock in the
// database the DSN connects to. A table name is resolved like
// to_regclass does, so an unqualified name follows the role's search_path.
package pglock

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Name is the service's registry name (?service=postgres, postgres:NAME).
const Name = "postgres"

// Recipes of the nodes and snapshots.
const (
	Advisory lockqueue.Recipe = "postgres-advisory"
	RowLock  lockqueue.Recipe = "postgres-row"
)

// tableName is [schema.]table in unquoted identifiers, as PostgreSQL
// folds them (lower case).
var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_$]{0,62}(\.[a-z_][a-z0-9_$]{0,62})?$`)

// lockName is a parsed lock name.
type lockName struct {
	recipe lockqueue.Recipe
	// advisory: pg_locks' classid, objid and objsubid for the key.
	classid, objid uint32
	objsubid       int16
	// table: the relation as the user wrote it.
	table string
}

// CheckName says whether name names a PostgreSQL lock, without asking the
// server.
func CheckName(name string) error {
	_, err := parseName(name)
	return err
}

func parseName(name string) (lockName, error) {
	kind, rest, _ := strings.Cut(name, "/")
	switch kind {
	case "advisory":
		parts := strings.Split(rest, "/")
		switch len(parts) {
		case 1:
			k, err := strconv.ParseInt(parts[0], 10, 64)
			if err != nil {
				return lockName{}, badName(name, "advisory/KEY wants a bigint key, e.g. advisory/42")
			}
			// PostgreSQL splits the bigint key: high half in classid,
			// low half in objid, objsubid 1.
			return lockName{recipe: Advisory, classid: uint32(uint64(k) >> 32), objid: uint32(k), objsubid: 1}, nil
		case 2:
			k1, err1 := strconv.ParseInt(parts[0], 10, 32)
			k2, err2 := strconv.ParseInt(parts[1], 10, 32)
			if err1 != nil || err2 != nil {
				return lockName{}, badName(name, "advisory/KEY1/KEY2 wants two int4 keys, e.g. advisory/1/2")
			}
			return lockName{recipe: Advisory, classid: uint32(int32(k1)), objid: uint32(int32(k2)), objsubid: 2}, nil
		}
		return lockName{}, badName(name, "want advisory/KEY or advisory/KEY1/KEY2")
	case "table":
		// to_regclass fails the whole poll on a name it cannot parse, so
		// only plain identifiers pass (quoted ones are not supported).
		if !tableName.MatchString(rest) {
			return lockName{}, badName(name, "want table/SCHEMA.TABLE (or table/TABLE on the search_path) in unquoted lower-case identifiers, e.g. table/public.orders")
		}
		return lockName{recipe: RowLock, table: rest}, nil
	}
	return lockName{}, badName(name, "want advisory/KEY, advisory/KEY1/KEY2 or table/SCHEMA.TABLE")
}

func badName(name, why string) error {
	return fmt.Errorf("%w %q for postgres: %s", lockservice.ErrBadName, name, why)
}

// What --watch-under postgres:KIND finds.
const (
	// DiscoverAdvisory: every advisory lock of the database held or
	// waited on, each named advisory/KEY or advisory/KEY1/KEY2.
	DiscoverAdvisory = "advisory"
	// DiscoverRows: every table whose row locks someone waits for, named
	// table/SCHEMA.TABLE. A row lock nobody waits for leaves no trace in
	// pg_locks, so it is not found.
	DiscoverRows = "rows"
)

// CheckDiscover says whether kind is something --watch-under postgres:
// can find.
func CheckDiscover(kind string) error {
	switch kind {
	case DiscoverAdvisory, DiscoverRows:
		return nil
	}
	return fmt.Errorf("%w %q for postgres discovery: want advisory (every advisory lock held or waited on) or rows (every table with a row lock waited for)",
		lockservice.ErrBadName, kind)
}

// advisoryName is the name of the advisory lock pg_locks shows with these
// keys, as parseName reads it back: objsubid 1 is one bigint key split
// across classid (high half) and objid (low half), 2 is two int4 keys.
func advisoryName(classid, objid uint32, objsubid int16) (string, bool) {
	switch objsubid {
	case 1:
		return "advisory/" + strconv.FormatInt(int64(uint64(classid)<<32|uint64(objid)), 10), true
	case 2:
		return "advisory/" + strconv.Itoa(int(int32(classid))) + "/" + strconv.Itoa(int(int32(objid))), true
	}
	return "", false
}
