package rediscluster

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestServerStopStartSamePort(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	ctx := context.Background()
	addr := s.Addr()
	c := newClient(t, addr)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	s.Stop()
	if s.Running() {
		t.Fatal("Running after Stop")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered while stopped")
	}
	s.Stop() // stopping twice is harmless

	s.Start()
	if s.Addr() != addr || !s.Running() {
		t.Fatalf("after Start: addr %s (was %s), running %v", s.Addr(), addr, s.Running())
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("same client after restart: %v", err)
	}
	// Without persistence a restart starts empty.
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k after restart = %v, want redis.Nil", err)
	}
	if s.URL() != "redis://"+addr+"/0" {
		t.Errorf("URL() = %s", s.URL())
	}
}

func TestServerKillKeepsDataWithPersistence(t *testing.T) {
	t.Parallel()
	s := StartServer(t, WithPersistence())
	ctx := context.Background()
	c := newClient(t, s.Addr())
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Kill() // a crash: the AOF (fsync always) has the write
	if s.Running() {
		t.Fatal("Running after Kill")
	}
	s.Start()
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET k after crash = %q, %v; want v", got, err)
	}
	s.Restart()
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET k after restart = %q, %v; want v", got, err)
	}
}

func TestServerWithArgs(t *testing.T) {
	t.Parallel()
	s := StartServer(t, WithArgs("--databases", "4"))
	got, err := newClient(t, s.Addr()).ConfigGet(context.Background(), "databases").Result()
	if err != nil || got["databases"] != "4" {
		t.Fatalf("CONFIG GET databases = %v, %v", got, err)
	}
}

func TestServerCleansUp(t *testing.T) {
	t.Parallel()
	var addr string
	t.Run("server", func(t *testing.T) { addr = StartServer(t).Addr() })
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = conn.Close()
		t.Fatalf("server %s still accepts connections after the test ended", addr)
	}
}
