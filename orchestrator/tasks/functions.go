package tasks

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// library is the Redis function library of the ledger's scripts (lua.lib).
type library struct {
	name string           // flowgate_tasks_<hash>
	code string           // FUNCTION LOAD's argument
	fn   map[*proc]string // each script's function name, fgt_<hash>_<name>
}

// ledgerLibrary builds the library once.
var ledgerLibrary = sync.OnceValue(func() library {
	ps := lua.lib // sorted by name
	h := sha1.New()
	h.Write([]byte(lua.prelude))
	for _, p := range ps {
		fmt.Fprintf(h, "\x00%s\x00%s", p.name, p.body)
	}
	sum := hex.EncodeToString(h.Sum(nil))[:16]
	lib := library{name: "flowgate_tasks_" + sum, fn: make(map[*proc]string, len(ps))}
	var b strings.Builder
	b.WriteString("#!lua name=" + lib.name + "\n")
	b.WriteString(lua.prelude)
	for _, p := range ps {
		lib.fn[p] = "fgt_" + sum + "_" + p.name
		fmt.Fprintf(&b, "\nredis.register_function('%s', function(KEYS, ARGV)\n%s\nend)\n", lib.fn[p], p.body)
	}
	lib.code = b.String()
	return lib
})

// LibraryName is the name of this build's function library,
// flowgate_tasks_<hash of its code>; LibraryPattern matches the libraries
// of every flowgate version (FUNCTION LIST LIBRARYNAME).
func LibraryName() string { return ledgerLibrary().name }

// LibraryPattern matches the function library of every flowgate version.
const LibraryPattern = "flowgate_tasks_*"

// How the ledger calls its scripts.
const (
	modeUnknown  int32 = iota // not decided yet: EVAL until it is
	modeFunction              // FCALL of the loaded library
	modeEval                  // EVALSHA: Redis has no FUNCTION, or refused it
)

// ScriptMode names how the ledger calls its scripts: "functions" (the
// library is loaded; FCALL) or "eval" (EVALSHA), with why in reason.
type ScriptMode struct {
	Mode   string
	Reason string
}

// scripts calls the ledger's scripts on one Redis client, as Redis
// functions where it can.
//
// EVAL runs a script's whole text on every call. With the prelude that is a
// dozen closures and two tables built, and later collected, on every call:
// about 3.5 µs of Redis time per call (docs/performance.md), a seventh of
// an ACK. Redis 7's functions keep a library loaded: its helpers are built
// once, when it loads, and a call runs its body alone.
//
// So where Redis has FUNCTION the ledger loads one library holding every
// script of the prelude and calls them with FCALL. Its name and its
// functions' names carry a hash of its code, so that flowgate instances of
// two versions sharing one Redis (a rolling upgrade) each call their own.
// Where Redis has no FUNCTION (Redis 6, the miniredis of `go run` without
// REDIS_URL) or refuses it (an ACL), the ledger calls the same scripts with
// EVALSHA, as it always did. Both ways run the same Lua (lua/): each script
// begins with local c = begin(KEYS, ARGV), and the prelude's helpers take
// the call's keys and arguments from that c, so nothing of one call
// outlives it in the loaded library.
//
// A server loses its functions with its data (a restart without
// persistence, FLUSHALL, a new master added empty). An FCALL answered
// "Function not found" never ran: the ledger loads the library again (on
// every master of a cluster) and calls once more, and if the function is
// still missing it runs the call as EVAL.
type scripts struct {
	rdb    redis.UniversalClient // loads the library, decides the mode
	hot    redis.Cmdable         // runs the scripts: rdb, or its AutoPipeliner (Config.PlainRedis)
	mode   atomic.Int32
	reason atomic.Value // string: why the mode is eval
}

// LoadScripts loads the ledger's function library where Redis has
// FUNCTION, and reports how the ledger calls its scripts from now on. A
// ledger that is not told loads it on its first call. A failure to reach
// Redis leaves the choice to the next call (which runs as EVAL meanwhile).
func (l *Ledger) LoadScripts(ctx context.Context) (ScriptMode, error) {
	if err := l.sc.decide(ctx); err != nil {
		return ScriptMode{}, storeError("tasks.LoadScripts", err)
	}
	if l.sc.mode.Load() == modeFunction {
		return ScriptMode{Mode: "functions", Reason: "library " + ledgerLibrary().name}, nil
	}
	r, _ := l.sc.reason.Load().(string)
	return ScriptMode{Mode: "eval", Reason: r}, nil
}

// clipRefusal keeps the part of Redis' refusal that says why: an older
// Redis (or miniredis) echoes the command's arguments — the whole 40 KB
// library — after "with args beginning with", and that reason is logged.
func clipRefusal(msg string) string {
	const most = 200
	if i := strings.Index(msg, ", with args beginning with"); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > most {
		msg = strings.ToValidUTF8(msg[:most], "") + fmt.Sprintf("… (%d more bytes)", len(msg)-most)
	}
	return msg
}

// decide loads the library while the mode is unknown: loaded (or there
// already) means functions; a refusal from Redis means eval for good.
// Another error (Redis unreachable) decides nothing and is returned.
func (s *scripts) decide(ctx context.Context) error {
	if s.mode.Load() != modeUnknown {
		return nil
	}
	err := s.load(ctx)
	var rerr redis.Error
	switch {
	case err == nil:
		s.mode.CompareAndSwap(modeUnknown, modeFunction)
	case errors.As(err, &rerr):
		s.reason.Store("FUNCTION LOAD refused: " + clipRefusal(err.Error()))
		s.mode.CompareAndSwap(modeUnknown, modeEval)
	default:
		return err
	}
	return nil
}

// load loads the library on the server, or on every master of a cluster.
// A library of that name already there is the same code: loaded.
func (s *scripts) load(ctx context.Context) error {
	lib := ledgerLibrary()
	one := func(ctx context.Context, c redis.Cmdable) error {
		err := c.FunctionLoad(ctx, lib.code).Err()
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil
		}
		return err
	}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return one(ctx, c) })
	}
	return one(ctx, s.rdb)
}

// run calls p with keys and args (as EVAL when p is not in the library:
// a test's script).
func (s *scripts) run(ctx context.Context, p *proc, keys []string, args ...any) *redis.Cmd {
	if s.mode.Load() == modeUnknown {
		_ = s.decide(ctx) // unreachable: EVAL below reports it
	}
	fn, ok := ledgerLibrary().fn[p]
	if s.mode.Load() != modeFunction || !ok {
		return p.eval.Run(ctx, s.hot, keys, args...)
	}
	cmd := s.hot.FCall(ctx, fn, keys, args...)
	if !functionMissing(cmd.Err()) {
		return cmd
	}
	if s.load(ctx) == nil {
		if cmd = s.hot.FCall(ctx, fn, keys, args...); !functionMissing(cmd.Err()) {
			return cmd
		}
	}
	return p.eval.Run(ctx, s.hot, keys, args...)
}

// functionMissing reports an FCALL refused because the server has no such
// function (it ran nothing).
func functionMissing(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.Contains(err.Error(), "Function not found")
}
