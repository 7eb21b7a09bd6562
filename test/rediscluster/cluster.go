// Package rediscluster starts real Redis servers for tests in any package:
// a local three-master Redis Cluster (Start) and a single throwaway
// redis-server that can be stopped, killed and started again on the same
// port (StartServer).
//
// Every process is killed and its temporary dir removed when the test ends,
// pass or fail; on Linux a process is also killed when the test binary dies
// (a -timeout panic runs no cleanups). When redis-server (or, for a cluster,
// redis-cli) cannot be found, in FLOWGATE_TEST_REDIS_SERVER or on PATH, the
// test is skipped. test/run exports FLOWGATE_TEST_REDIS_SERVER.
package rediscluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// masters is the number of cluster masters.
const masters = 3

// Cluster is a running local Redis Cluster of three masters that together
// serve all 16384 slots, each with the replicas StartWithReplicas asked for.
type Cluster struct {
	addrs  []string // every node, the masters first as created
	nodes  map[string]*node
	client *redis.ClusterClient
}

// node is one cluster node's process and how to start it again.
type node struct {
	t             testing.TB
	bin, out, log string
	args          []string
	name          string
	addr          string
	mu            sync.Mutex
	proc          *process
}

// Start starts a three-master Redis Cluster (no replicas) on free ports,
// waits until every node reports cluster_state:ok and a ClusterClient can
// write to every master, and registers the cleanup that closes the client,
// kills the nodes and removes their dir.
func Start(t testing.TB) *Cluster { return StartWithReplicas(t, 0) }

// StartWithReplicas is Start with replicas replicas per master (the
// failover drills): 3 × (1 + replicas) nodes, `redis-cli --cluster create
// --cluster-replicas`, and a node timeout of 2 s so a killed master's
// replica is promoted within a few seconds.
func StartWithReplicas(t testing.TB, replicas int) *Cluster {
	t.Helper()
	server, cli := binaries(t, true)
	dir := t.TempDir()
	began := time.Now()

	c := &Cluster{nodes: map[string]*node{}}
	timeout := "5000"
	if replicas > 0 {
		timeout = "2000"
	}
	for range masters * (1 + replicas) {
		n, err := startNode(t, server, dir, timeout)
		if err != nil {
			t.Fatalf("rediscluster: %v", err)
		}
		c.addrs = append(c.addrs, n.addr)
		c.nodes[n.addr] = n
	}
	if err := create(cli, c.addrs, replicas); err != nil {
		t.Fatalf("rediscluster: %v", err)
	}
	if err := waitClusterOK(c.addrs); err != nil {
		t.Fatalf("rediscluster: %v", err)
	}
	c.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs})
	t.Cleanup(func() { _ = c.client.Close() })
	if err := probe(c.client); err != nil {
		t.Fatalf("rediscluster: cluster on %v: %v", c.addrs, err)
	}
	if replicas > 0 {
		if err := waitReplicasLinked(c.client, replicas); err != nil {
			t.Fatalf("rediscluster: %v", err)
		}
	}
	t.Logf("rediscluster: %d-master cluster (%d replicas each) on %s ready in %s",
		masters, replicas, strings.Join(c.addrs, ","), time.Since(began).Round(time.Millisecond))
	return c
}

// Kill sends SIGKILL to the node at addr (a master, to make its replica
// take over) and waits for it to exit.
func (c *Cluster) Kill(addr string) {
	if n := c.nodes[addr]; n != nil {
		n.mu.Lock()
		n.proc.stop(syscall.SIGKILL, 0)
		n.mu.Unlock()
	}
}

// Restart starts a killed node again on its port with its cluster config
// file: it rejoins the cluster (a failed-over master as a replica of the
// node that took its slots). It waits until the node answers PING.
func (c *Cluster) Restart(addr string) {
	n := c.nodes[addr]
	if n == nil {
		return
	}
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.proc.exited() {
		n.t.Fatalf("rediscluster: Restart: node %s is running", addr)
	}
	p, err := startProcess(n.name, n.bin, n.args, n.out, n.log)
	if err != nil {
		n.t.Fatalf("rediscluster: Restart: %v", err)
	}
	n.t.Cleanup(func() { p.stop(syscall.SIGKILL, 0) })
	if err := p.waitReady(addr); err != nil {
		n.t.Fatalf("rediscluster: Restart: %v", err)
	}
	n.proc = p
}

// waitReplicasLinked waits until every master reports n connected replicas
// whose link is up, so a write can be acknowledged by them.
func waitReplicasLinked(c *redis.ClusterClient, n int) error {
	deadline := time.Now().Add(startTimeout)
	ctx := context.Background()
	for {
		err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			info, err := m.Info(ctx, "replication").Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "connected_slaves:"+strconv.Itoa(n)) || strings.Contains(info, "state=wait_bgsave") {
				return fmt.Errorf("master %s: replicas not linked yet", m.Options().Addr)
			}
			return nil
		})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SkipUnlessAvailable skips t, as Start would, when redis-server or
// redis-cli is missing: for a test that runs cluster tests elsewhere (in a
// child process) and should skip before starting it.
func SkipUnlessAvailable(t testing.TB) {
	t.Helper()
	binaries(t, true)
}

// Addrs are the host:port addresses of the nodes (the three masters first,
// as created; after a failover a replica may be a master).
func (c *Cluster) Addrs() []string { return append([]string(nil), c.addrs...) }

// Client is a ClusterClient over all nodes, closed when the test ends.
func (c *Cluster) Client() *redis.ClusterClient { return c.client }

// AsynqOpt is the asynq connection option for this cluster.
func (c *Cluster) AsynqOpt() asynq.RedisClusterClientOpt {
	return asynq.RedisClusterClientOpt{Addrs: c.Addrs()}
}

// startNode starts one cluster-enabled redis-server whose client and bus
// ports are free, trying other ports when one is taken meanwhile. Its kill
// is registered as a cleanup of t.
func startNode(t testing.TB, bin, dir, nodeTimeout string) (*node, error) {
	var lastErr error
	for range 5 {
		port, err := freePort(true)
		if err != nil {
			return nil, err
		}
		ps := strconv.Itoa(port)
		logFile := filepath.Join(dir, "redis-"+ps+".log")
		args := []string{
			"--port", ps, "--bind", "127.0.0.1", "--daemonize", "no",
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes-"+ps+".conf"),
			"--cluster-node-timeout", nodeTimeout,
			"--repl-diskless-sync-delay", "0", // a replica links at once, not after 5 s
			"--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", logFile,
		}
		n := &node{t: t, bin: bin, out: filepath.Join(dir, "redis-"+ps+".out"), log: logFile, args: args,
			name: "cluster node :" + ps, addr: net.JoinHostPort("127.0.0.1", ps)}
		p, err := startProcess(n.name, bin, args, n.out, logFile)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { p.stop(syscall.SIGKILL, 0) })
		if lastErr = p.waitReady(n.addr); lastErr == nil {
			n.proc = p
			return n, nil
		}
		p.stop(syscall.SIGKILL, 0)
		if !p.addressInUse() {
			break
		}
	}
	return nil, lastErr
}

// create joins the nodes with `redis-cli --cluster create`, which assigns
// the slots evenly and waits until the nodes agree on them.
func create(cli string, addrs []string, replicas int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*startTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// waitClusterOK waits until every node reports cluster_state:ok with all
// slots assigned and all nodes known.
func waitClusterOK(addrs []string) error {
	deadline := time.Now().Add(startTimeout)
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1})
		var info string
		var err error
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			info, err = c.ClusterInfo(ctx).Result()
			cancel()
			if err == nil && clusterReady(info, len(addrs)) {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Close()
				if err == nil {
					err = errors.New("cluster_state not ok")
				}
				return fmt.Errorf("node %s not ready within %s (err %w):\n%s", addr, startTimeout, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
	}
	return nil
}

func clusterReady(info string, knownNodes int) bool {
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields["cluster_state"] == "ok" &&
		fields["cluster_slots_assigned"] == "16384" &&
		fields["cluster_slots_ok"] == "16384" &&
		fields["cluster_known_nodes"] == strconv.Itoa(knownNodes)
}

// probe writes and reads back keys spread over many slots until all work
// (right after creation a node may still answer CLUSTERDOWN), checks that
// every master took some, and deletes them.
func probe(c *redis.ClusterClient) error {
	const n = 128
	deadline := time.Now().Add(startTimeout)
	ctx := context.Background()
	for i := range n {
		key := fmt.Sprintf("rediscluster:probe:%d", i)
		for {
			err := c.Set(ctx, key, i, time.Minute).Err()
			if err == nil {
				var got int
				got, err = c.Get(ctx, key).Int()
				if err == nil && got != i {
					err = fmt.Errorf("GET %s = %d, want %d", key, got, i)
				}
			}
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("SET/GET %s: %w", key, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		size, err := m.DBSize(ctx).Result()
		if err != nil {
			return err
		}
		if size == 0 {
			return fmt.Errorf("master %s holds none of %d probe keys", m.Options().Addr, n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range n {
		if err := c.Del(ctx, fmt.Sprintf("rediscluster:probe:%d", i)).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Pause stops the node at addr with SIGSTOP (a replica that falls behind:
// its master's writes are not applied while it is stopped); resume sends
// SIGCONT, as does the end of the test.
func (c *Cluster) Pause(addr string) (resume func()) {
	n := c.nodes[addr]
	if n == nil {
		return func() {}
	}
	n.mu.Lock()
	p := n.proc.cmd.Process
	n.mu.Unlock()
	_ = p.Signal(syscall.SIGSTOP)
	var once sync.Once
	resume = func() { once.Do(func() { _ = p.Signal(syscall.SIGCONT) }) }
	n.t.Cleanup(resume)
	return resume
}

// ReplicaOf is the address of a replica of the master at addr, from that
// master's INFO replication.
func (c *Cluster) ReplicaOf(ctx context.Context, addr string) (string, error) {
	m := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1})
	defer m.Close()
	info, err := m.Info(ctx, "replication").Result()
	if err != nil {
		return "", fmt.Errorf("rediscluster: INFO replication of %s: %w", addr, err)
	}
	for _, line := range strings.Split(info, "\n") {
		// slave0:ip=127.0.0.1,port=16155,state=online,offset=…,lag=0
		if !strings.HasPrefix(line, "slave") || !strings.Contains(line, ":ip=") {
			continue
		}
		var ip, port string
		for _, f := range strings.Split(strings.SplitN(line, ":", 2)[1], ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
			switch k {
			case "ip":
				ip = v
			case "port":
				port = v
			}
		}
		if ip != "" && port != "" {
			return net.JoinHostPort(ip, port), nil
		}
	}
	return "", fmt.Errorf("rediscluster: master %s reports no replica", addr)
}
