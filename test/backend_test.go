package test

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/rediscluster"
	"github.com/flowgate/flowgate/test/redistest"
)

// The Redis behind the end-to-end tests that call newTestRedis is chosen by
// FLOWGATE_TEST_BACKEND:
//
//	unset, "redis"  a leased database of the test Redis (redistest.New)
//	"cluster"       a 3-master Redis Cluster of the test's own
//	                (rediscluster.Start), the binary on REDIS_CLUSTER_ADDRS
//	                with REDIS_SHARDS=clusterShards
//
// TestE2EOnRedisCluster re-runs those tests with "cluster" in a child
// process, so the usual test command covers both.
const backendEnv = "FLOWGATE_TEST_BACKEND"

// clusterShards is the REDIS_SHARDS of a binary on the cluster backend: two
// hash tags per master for each of tasks, holds and the buffer.
const clusterShards = 6

// onCluster reports whether FLOWGATE_TEST_BACKEND=cluster.
func onCluster() bool { return os.Getenv(backendEnv) == "cluster" }

// testRedis is an empty Redis of one test on the chosen backend.
type testRedis struct {
	// Client reaches the same keys as the binary: a *redis.Client on the
	// leased database, a *redis.ClusterClient on the cluster.
	Client redis.UniversalClient
	// Cluster is the cluster on the cluster backend, nil otherwise.
	Cluster *rediscluster.Cluster
	// Shards is the REDIS_SHARDS the binary runs with (1 on a single Redis).
	Shards int
	url    string
}

// URL is the REDIS_URL to give the binary: a real URL on a single Redis, a
// flowgatetest.ClusterURL on the cluster (startFlowgate turns it into
// REDIS_CLUSTER_ADDRS and REDIS_SHARDS), so bookingEnv, taskEnv and the
// other env builders work unchanged on both.
func (r *testRedis) URL() string { return r.url }

// newTestRedis gives t an empty Redis on the backend FLOWGATE_TEST_BACKEND
// chooses; on the cluster backend it skips t when redis-server or redis-cli
// is missing.
func newTestRedis(t *testing.T) *testRedis {
	t.Helper()
	if !onCluster() {
		db := redistest.New(t)
		return &testRedis{Client: db.Client, Shards: 1, url: db.URL()}
	}
	c := rediscluster.Start(t)
	return &testRedis{Client: c.Client(), Cluster: c, Shards: clusterShards,
		url: flowgatetest.ClusterURL(c.Addrs(), clusterShards)}
}

// holdsConfigFor is cfg for an in-process hold engine that shares the
// binary's keys on r: with the binary's shard count (REDIS_SHARDS).
func holdsConfigFor(r *testRedis, cfg holds.Config) holds.Config {
	cfg.Shards = r.Shards
	return cfg
}
