// Package durable makes an acknowledged write survive a Redis failover.
//
// Redis replicates asynchronously: a write the master has executed, and
// flowgate has already answered with success, can be missing on the replica
// that Sentinel or Cluster promotes when the master dies. A Barrier closes
// that window. Sync returns once every write that completed before the call
// — on any connection, flowgate's own or Asynq's — is held by at least N
// replicas of every master, or fails after a timeout; the caller answers
// success only after it.
//
// How: a replica applies its master's replication stream in order, so a
// write acknowledged by N replicas proves every earlier write of that master
// is on them too. Redis' WAIT waits for the last write *of its own
// connection*, so a round writes one marker key (INCR) and sends WAIT N on
// the same connection, in one pipeline: one round trip plus the replicas'
// acknowledgement. On a Cluster a round does this on every master, in
// parallel, with a marker key whose slot that master owns.
//
// Rounds are shared (group commit): callers that arrive while a round is in
// flight join the next one, which starts when the current one ends, so under
// load the cost is one round per replication latency, not one per request.
// A caller never joins a round already sent: its marker might precede the
// caller's write.
//
// Its keys, one marker per master, never read, are in RedisKeys.
package durable

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/shard"
)

// ErrNotReplicated is returned (wrapped) when fewer replicas than required
// acknowledged within the timeout. It says so through NotReplicated, so the
// HTTP shell (orchestrator/web.Replicated, a leaf that imports no domain)
// can tell it from a failed check.
var ErrNotReplicated error = notReplicated{}

type notReplicated struct{}

func (notReplicated) Error() string       { return "durable: write not acknowledged by enough replicas" }
func (notReplicated) NotReplicated() bool { return true }

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = time.Second

// Config configures a Barrier.
type Config struct {
	// Replicas is N: how many replicas must hold a write (REDIS_MIN_REPLICAS_ACK).
	// Must be ≥ 1; a zero setting means no Barrier at all.
	Replicas int
	// Timeout bounds WAIT (REDIS_REPLICA_ACK_TIMEOUT). Default DefaultTimeout.
	Timeout time.Duration
	// KeyPrefix of the marker keys. Default "flowgate:durable:".
	KeyPrefix string
	// SlotsTTL is how long a Cluster's slot map is reused before it is
	// read again (it is also read again after any failed round). Default 1 s.
	SlotsTTL time.Duration
	// Now is the clock of SlotsTTL. Default time.Now.
	Now func() time.Time
}

func (c *Config) defaults() error {
	if c.Replicas < 1 {
		return fmt.Errorf("durable: Replicas %d: must be ≥ 1", c.Replicas)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Timeout < time.Millisecond {
		return fmt.Errorf("durable: Timeout %s: must be ≥ 1ms", c.Timeout)
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = keyspace.DefaultKeyPrefix + ":durable:"
	}
	if c.SlotsTTL == 0 {
		c.SlotsTTL = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Barrier waits for replicas. It is safe for concurrent use.
type Barrier struct {
	cfg    Config
	client redis.UniversalClient

	mu       sync.Mutex
	inflight bool
	next     *round

	slotsMu sync.Mutex
	slots   []masterMarker // Cluster: one marker key per master
	slotsAt time.Time
	stale   bool
}

// round is one shared INCR+WAIT; done closes when err is set.
type round struct {
	done chan struct{}
	err  error
}

type masterMarker struct{ key string }

// New returns a Barrier on client: a *redis.Client (one server, or a
// Sentinel failover client) or a *redis.ClusterClient.
func New(client redis.UniversalClient, cfg Config) (*Barrier, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	switch client.(type) {
	case *redis.Client, *redis.ClusterClient:
	default:
		return nil, fmt.Errorf("durable: unsupported client %T", client)
	}
	return &Barrier{cfg: cfg, client: client}, nil
}

// Replicas is the N the Barrier waits for.
func (b *Barrier) Replicas() int { return b.cfg.Replicas }

// Sync returns nil once every write completed before the call is held by
// Replicas replicas of every master; an error wrapping ErrNotReplicated when
// they did not acknowledge within the timeout, or Redis' error.
func (b *Barrier) Sync(ctx context.Context) error {
	b.mu.Lock()
	r := b.next
	if r == nil {
		r = &round{done: make(chan struct{})}
		b.next = r
	}
	if !b.inflight {
		b.start()
	}
	b.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("durable: waiting for replicas: %w", ctx.Err())
	}
}

// start sends the pending round; b.mu is held.
func (b *Barrier) start() {
	r := b.next
	b.next = nil
	b.inflight = true
	go func() {
		// A round's own deadline: WAIT's timeout plus the round trips. It
		// does not follow any one caller's context, since it serves many.
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Timeout+5*time.Second)
		r.err = b.round(ctx)
		cancel()
		close(r.done)
		b.mu.Lock()
		b.inflight = false
		if b.next != nil {
			b.start()
		}
		b.mu.Unlock()
	}()
}

func (b *Barrier) round(ctx context.Context) error {
	switch c := b.client.(type) {
	case *redis.ClusterClient:
		return b.clusterRound(ctx, c)
	case *redis.Client:
		return b.wait(ctx, c, b.cfg.KeyPrefix+"{0}")
	}
	return fmt.Errorf("durable: unsupported client %T", b.client)
}

// wait writes key and waits for the replicas, on one connection of node.
func (b *Barrier) wait(ctx context.Context, node *redis.Client, key string) error {
	var acked *redis.Cmd
	_, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, key)
		acked = p.Do(ctx, "WAIT", b.cfg.Replicas, b.cfg.Timeout.Milliseconds())
		return nil
	})
	if err != nil {
		return fmt.Errorf("durable: INCR+WAIT on %s: %w", node.Options().Addr, err)
	}
	n, err := acked.Int()
	if err != nil {
		return fmt.Errorf("durable: WAIT on %s: %w", node.Options().Addr, err)
	}
	if n < b.cfg.Replicas {
		return fmt.Errorf("%w: %d of %d on %s within %s", ErrNotReplicated, n, b.cfg.Replicas, node.Options().Addr, b.cfg.Timeout)
	}
	return nil
}

func (b *Barrier) clusterRound(ctx context.Context, cc *redis.ClusterClient) error {
	markers, err := b.markers(ctx, cc)
	if err != nil {
		return err
	}
	errs := make([]error, len(markers))
	var wg sync.WaitGroup
	for i, m := range markers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node, err := cc.MasterForKey(ctx, m.key)
			if err != nil {
				errs[i] = fmt.Errorf("durable: master of %s: %w", m.key, err)
				return
			}
			errs[i] = b.wait(ctx, node, m.key)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.slotsMu.Lock()
		b.stale = true // the layout may have changed (a failover): read it again
		b.slotsMu.Unlock()
		return err
	}
	return nil
}

// markers returns one marker key per shard (a master and its replicas) of
// the Cluster, in the shard's first slot range; MasterForKey then finds
// whichever node is that shard's master now. Read again after SlotsTTL or
// a failed round.
func (b *Barrier) markers(ctx context.Context, cc *redis.ClusterClient) ([]masterMarker, error) {
	b.slotsMu.Lock()
	defer b.slotsMu.Unlock()
	if b.slots != nil && !b.stale && b.cfg.Now().Sub(b.slotsAt) < b.cfg.SlotsTTL {
		return b.slots, nil
	}
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("durable: CLUSTER SHARDS: %w", err)
	}
	out := make([]masterMarker, 0, len(shards))
	for _, sh := range shards {
		if len(sh.Slots) == 0 {
			continue // a shard that serves no slot holds no write to wait for
		}
		r := sh.Slots[0]
		out = append(out, masterMarker{key: b.keyIn(int(r.Start), int(r.End))})
	}
	b.slots, b.slotsAt, b.stale = out, b.cfg.Now(), false
	return out, nil
}

// keyIn is the first marker key "<prefix>{n}" whose slot is in [lo, hi].
func (b *Barrier) keyIn(lo, hi int) string {
	for n := 0; ; n++ {
		k := b.cfg.KeyPrefix + "{" + strconv.Itoa(n) + "}"
		if s := shard.Slot(k); s >= lo && s <= hi {
			return k
		}
	}
}
