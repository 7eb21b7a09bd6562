//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// The Redis topologies the failover drill (failover_drill_test.go) kills a
// master of: Sentinel with a link-cutting proxy, a Cluster with replicas.

func sentinelTopology(t *testing.T) topology {
	t.Helper()
	master := rediscluster.StartServer(t, rediscluster.WithArgs("--repl-diskless-sync-delay", "0"))
	// The replica reaches its master through a proxy that can cut the link
	// (a partition: the master's stream is dropped, not delayed).
	link := startLinkProxy(t, master.Addr())
	replica := rediscluster.StartServer(t, rediscluster.WithArgs("--repl-diskless-sync-delay", "0",
		"--replicaof", "127.0.0.1", portOf(link.addr)))
	waitLinked(t, replica.Addr())
	var sentinels []string
	for range 3 {
		sentinels = append(sentinels, startSentinel(t, master.Port()))
	}
	return topology{
		env:     map[string]string{"REDIS_SENTINEL_ADDRS": strings.Join(sentinels, ","), "REDIS_SENTINEL_MASTER": "drill"},
		lag:     func() func() { link.cut.Store(true); return func() {} },
		lagWhat: "the replica's link cut (its master's stream dropped)",
		kill: func() string {
			master.Kill()
			link.close()
			return "the Sentinel-managed master " + master.Addr()
		},
		promoted: func() bool {
			out, _ := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", portOf(sentinels[0]),
				"sentinel", "get-master-addr-by-name", "drill").Output()
			return strings.Contains(string(out), strconv.Itoa(replica.Port()))
		},
		// Back as a master with an empty data set; the Sentinels turn it
		// into a replica of the promoted one within a second or two.
		rejoin: master.Start,
	}
}

func clusterTopology(t *testing.T) topology {
	t.Helper()
	c := rediscluster.StartWithReplicas(t, 1)
	ctx := context.Background()
	victim, err := c.MasterOf(ctx, "{tasks}")
	if err != nil {
		t.Fatal(err)
	}
	// A node other than the victim answers who owns the victim's slots.
	var other string
	for _, a := range c.Addrs() {
		if a != victim {
			other = a
			break
		}
	}
	replica, err := c.ReplicaOf(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	probe := redis.NewClient(&redis.Options{Addr: other, MaxRetries: -1})
	t.Cleanup(func() { _ = probe.Close() })
	return topology{
		env:     map[string]string{"REDIS_URL": flowgatetest.ClusterURL(c.Addrs(), 3)},
		lag:     func() func() { return c.Pause(replica) },
		lagWhat: "the replica stopped (SIGSTOP; resumed at the kill)",
		kill: func() string {
			c.Kill(victim)
			return "cluster master " + victim
		},
		promoted: func() bool {
			shards, err := probe.ClusterShards(ctx).Result()
			if err != nil {
				return false
			}
			// No shard that serves slots has the victim as its master (once
			// its replica is promoted, the victim is a slot-less shard of
			// its own, health "fail").
			for _, sh := range shards {
				for _, n := range sh.Nodes {
					if len(sh.Slots) > 0 && n.Role == "master" && net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)) == victim {
						return false
					}
				}
			}
			info, err := probe.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		},
		rejoin: func() { c.Restart(victim) },
	}
}

// startSentinel runs a redis-sentinel monitoring the master on port as
// "drill" (quorum 2, down after 1 s).
func startSentinel(t *testing.T, masterPort int) string {
	t.Helper()
	bin := os.Getenv("FLOWGATE_TEST_REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor drill 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds drill 1000\nsentinel failover-timeout drill 10000\n", portOf(addr), dir, masterPort)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Skipf("redis-sentinel: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command("redis-cli", "-p", portOf(addr), "sentinel", "get-master-addr-by-name", "drill").Output()
		if strings.Contains(string(out), strconv.Itoa(masterPort)) {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel on %s never reported the master: %q", addr, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// linkProxy forwards TCP to a Redis master; while cut is set, what the
// master sends is read and dropped (the replica's acknowledgements still
// reach the master, so WAIT sees them stall).
type linkProxy struct {
	addr  string
	cut   atomic.Bool
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startLinkProxy(t *testing.T, target string) *linkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{addr: ln.Addr().String(), ln: ln}
	t.Cleanup(p.close)
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = down.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, down, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, down) }()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := up.Read(buf)
					if n > 0 && !p.cut.Load() {
						if _, werr := down.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						_ = down.Close()
						return
					}
				}
			}()
		}
	}()
	return p
}

func (p *linkProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func portOf(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

// waitLinked waits until the replica at addr has its master link up.
func waitLinked(t *testing.T, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s never linked: %v %s", addr, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
