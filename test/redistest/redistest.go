// Package redistest gives tests a Redis database of their own on the server
// named by FLOWGATE_TEST_REDIS_URL (default redis://127.0.0.1:6379/0), which
// test/run sets to its private redis-server. REDIS_URL is not read: it names
// a deployment's Redis, and one left in the shell must not become the
// tests'.
//
// Each call to New leases one of the logical databases 1..15 through a
// SET NX key in database 0, so test packages running in parallel processes
// never share a database (Asynq's keys are fixed, so a key prefix is not
// enough). A database is used only when it is empty or holds the marker this
// package leaves; every key written is removed at the end of the test. A
// Redis that the tests did not start is therefore never flushed, but for
// DB.Flush: a test of data loss empties its own leased database.
package redistest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

const (
	leasePrefix = "flowgate:test:dblease:"
	markerKey   = "flowgate:test:owned"
	leaseTTL    = 2 * time.Minute
	waitForDB   = 3 * time.Minute
	firstDB     = 1
	lastDB      = 15
)

// DB is a leased, empty database.
type DB struct {
	Client *redis.Client
	Num    int
	Addr   string
	pass   string
}

// URL is a redis:// URL selecting this database, for processes under test.
func (d *DB) URL() string {
	u := url.URL{Scheme: "redis", Host: d.Addr, Path: "/" + strconv.Itoa(d.Num)}
	if d.pass != "" {
		u.User = url.UserPassword("", d.pass)
	}
	return u.String()
}

// AsynqOpt is the asynq connection option for this database.
func (d *DB) AsynqOpt() asynq.RedisClientOpt {
	return asynq.RedisClientOpt{Addr: d.Addr, Password: d.pass, DB: d.Num}
}

// URLEnv names the Redis the tests use (test/run exports it).
const URLEnv = "FLOWGATE_TEST_REDIS_URL"

// BaseURL is FLOWGATE_TEST_REDIS_URL or the default.
func BaseURL() string {
	if u := os.Getenv(URLEnv); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// New leases a database for t and registers its cleanup.
func New(t testing.TB) *DB {
	t.Helper()
	opt, err := redis.ParseURL(BaseURL())
	if err != nil {
		t.Fatalf("redistest: %s %q: %v", URLEnv, BaseURL(), err)
	}
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: opt.Addr, Password: opt.Password, DB: 0})
	if err := admin.Ping(ctx).Err(); err != nil {
		_ = admin.Close()
		t.Fatalf("redistest: no Redis at %s (%v). Run the README's test command, which starts one, or set %s.", opt.Addr, err, URLEnv)
	}
	token := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	deadline := time.Now().Add(waitForDB)
	for {
		for n := firstDB; n <= lastDB; n++ {
			ok, err := admin.SetNX(ctx, leasePrefix+strconv.Itoa(n), token, leaseTTL).Result()
			if err != nil {
				t.Fatalf("redistest: lease: %v", err)
			}
			if !ok {
				continue
			}
			// MaxRetries -1 as flowgate's own client: a blind retry after
			// a read timeout would run a Lua transition twice.
			c := redis.NewClient(&redis.Options{Addr: opt.Addr, Password: opt.Password, DB: n, PoolSize: 64, MaxRetries: -1})
			if usable(ctx, t, c) {
				return lease(t, admin, c, n, opt, token)
			}
			_ = c.Close()
			admin.Del(ctx, leasePrefix+strconv.Itoa(n))
		}
		if time.Now().After(deadline) {
			_ = admin.Close()
			t.Fatalf("redistest: no free database 1..15 on %s after %s", opt.Addr, waitForDB)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// usable reports whether db is empty or was left by an earlier test run
// (then it is emptied). A database holding anyone else's keys is skipped.
func usable(ctx context.Context, t testing.TB, c *redis.Client) bool {
	size, err := c.DBSize(ctx).Result()
	if err != nil {
		t.Fatalf("redistest: DBSIZE: %v", err)
	}
	if size == 0 {
		return true
	}
	if c.Exists(ctx, markerKey).Val() == 1 {
		deleteAll(ctx, c)
		return true
	}
	return false
}

func lease(t testing.TB, admin, c *redis.Client, n int, opt *redis.Options, token string) *DB {
	ctx := context.Background()
	c.Set(ctx, markerKey, token, 0)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // keep the lease while the test runs
		defer close(done)
		tick := time.NewTicker(leaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				admin.Expire(ctx, leasePrefix+strconv.Itoa(n), leaseTTL)
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		deleteAll(ctx, c)
		admin.Del(ctx, leasePrefix+strconv.Itoa(n))
		_ = c.Close()
		_ = admin.Close()
	})
	return &DB{Client: c, Num: n, Addr: opt.Addr, pass: opt.Password}
}

// Flush empties the leased database with FLUSHDB — Redis losing every key
// under a running process, as a failover to an empty replica does — and
// puts the lease's marker back.
func (d *DB) Flush(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	if err := d.Client.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("redistest: FLUSHDB: %v", err)
	}
	if err := d.Client.Set(ctx, markerKey, "flushed", 0).Err(); err != nil {
		t.Fatalf("redistest: marker after FLUSHDB: %v", err)
	}
}

// deleteAll removes every key of the leased database (which held nothing
// but our marker when it was leased).
func deleteAll(ctx context.Context, c *redis.Client) {
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	batch := make([]string, 0, 1000)
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == cap(batch) {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
}

// Dead is a client for a port nobody listens on: Redis is down. It dials
// for at most 200 ms, once, and never retries a command, so a test of the
// fail-open and 503 paths does not wait on go-redis' own retries.
func Dead(t testing.TB) *redis.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
