package keyspace

import (
	"reflect"
	"strings"
)

// Key is one row of docs/keyspace.md: a Redis key, channel or function
// library flowgate writes, as the package that writes it declares it (its
// RedisKeys function, in keys.go). The doc's key tables are generated from
// these rows and nothing else (TestKeyspaceDocIsCurrent), so a key is
// described once, next to the code that builds it.
type Key struct {
	// Pattern is the production spelling: the prefix "flowgate" (or none,
	// for the hold engine and its faces), one shard's hash tag, variables
	// in <angle brackets>.
	Pattern string
	Type    Type
	Owner   string // the package that writes it ("orchestrator/tasks")
	// TTL is its lifetime; "" when it lives until flowgate deletes it
	// (the doc's "—").
	TTL  string
	What string // Markdown, one cell
	// Fields are a hash's fields (or a JSON value's), listed after What;
	// they come from the code that writes them where it has a list.
	Fields []string
}

// Type is a Key's Redis type, as docs/keyspace.md names it.
type Type string

// The types of docs/keyspace.md's TYPE column.
const (
	String  Type = "STRING"
	Hash    Type = "HASH"
	List    Type = "LIST"
	Set     Type = "SET"
	ZSet    Type = "ZSET"
	Channel Type = "pub/sub"                // a PUBLISH channel, not a key
	Library Type = "Redis function library" // FUNCTION LOAD, not a key
	Various Type = "various"                // another program's keys (Asynq's)
)

// IsKey reports whether t names a key (not a channel or a library).
func (t Type) IsKey() bool { return t != Channel && t != Library }

// RedisKeys are the keys of docs/keyspace.md whose writer declares none
// itself: the shard marker (sidecar/shardlayout.go, a main package), the
// scheduler's locks (the scheduler imports only contracts; its lock.go
// builds them, the test holds the two equal), Asynq's own keys and the
// operators' keys under flowgate's prefix.
func RedisKeys() []Key {
	return []Key{
		{Pattern: "flowgate:cron:{<job>}:lock", Type: String, Owner: "scheduler", TTL: "the job's MaxRunTime",
			What: "the token of the run holding the job's lock"},
		{Pattern: "flowgate:cron:{<job>}:last", Type: String, Owner: "scheduler", TTL: "a few intervals",
			What: "the last tick claimed (Unix ms)"},
		{Pattern: ShardMarker, Type: String, Owner: "sidecar",
			What: "the `REDIS_SHARDS` the data was written with (`sidecar/shardlayout.go`), set by the first start; " +
				"a start with another count is refused; without it a start looks for data under tags its count would " +
				"not read ([scale-out.md](scale-out.md)); never written or deleted through the operation endpoints"},
		{Pattern: "asynq:{<queue>}:…", Type: Various, Owner: "Asynq", TTL: "Asynq's (completed tasks: their retention)",
			What: "Asynq's own keys for the queues `critical`, `high`, `default`, `low` and `buffer.critical` … " +
				"`buffer.low`; the buffer reads `pending`, `active`, `scheduled`, `retry` and writes a task's `result` field"},
		{Pattern: "flowgate:ops:<name>", Type: String, Owner: "operators, through `redisSet`", TTL: "the `ttl` given",
			What: "the operators' own keys under flowgate's prefix; flowgate never reads them"},
	}
}

// JSONFields are the JSON names of T's fields, in order: a Key's Fields
// taken from the struct its value is written from.
func JSONFields[T any]() []string {
	t := reflect.TypeFor[T]()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = t.Field(i).Name
		}
		out = append(out, name)
	}
	return out
}
