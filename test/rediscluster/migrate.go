package rediscluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterOf is the address of the master that serves key's slot now, as
// the cluster says (CLUSTER SLOTS), not the client's cached map.
func (c *Cluster) MasterOf(ctx context.Context, key string) (string, error) {
	slot, err := c.client.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return "", fmt.Errorf("rediscluster: slot of %q: %w", key, err)
	}
	return c.slotOwner(ctx, int(slot))
}

// Migration is a slot moving from one master to another, started by
// BeginMigration and ended by (*Migration).Finish. While it runs, clients
// meet ASK redirections (keys already moved) and, for multi-key commands
// and scripts whose keys are split, TRYAGAIN.
type Migration struct {
	slot     int
	src, dst *redis.Client
	dstID    string
	others   []*redis.Client
	Moved    int // keys moved so far
}

// BeginMigration marks slot as migrating from its master to the master at
// index to of Addrs (CLUSTER SETSLOT IMPORTING / MIGRATING), and moves
// nothing yet.
func (c *Cluster) BeginMigration(ctx context.Context, slot, to int) (*Migration, error) {
	if slot < 0 || slot >= 16384 || to < 0 || to >= len(c.addrs) {
		return nil, fmt.Errorf("rediscluster: bad migration of slot %d to node %d", slot, to)
	}
	owner, err := c.slotOwner(ctx, slot)
	if err != nil {
		return nil, err
	}
	if owner == c.addrs[to] {
		return nil, fmt.Errorf("rediscluster: slot %d is already on %s", slot, owner)
	}
	m := &Migration{slot: slot}
	for _, addr := range c.addrs {
		cl := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2, MaxRetries: -1})
		switch addr {
		case owner:
			m.src = cl
		case c.addrs[to]:
			m.dst = cl
		default:
			m.others = append(m.others, cl)
		}
	}
	srcID, err := m.src.Do(ctx, "CLUSTER", "MYID").Text()
	if err == nil {
		m.dstID, err = m.dst.Do(ctx, "CLUSTER", "MYID").Text()
	}
	if err == nil {
		err = m.dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err()
	}
	if err == nil {
		err = m.src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", m.dstID).Err()
	}
	if err != nil {
		m.close()
		return nil, fmt.Errorf("rediscluster: begin migration of slot %d: %w", slot, err)
	}
	return m, nil
}

// Step moves up to n keys of the slot (MIGRATE … KEYS) and reports how many
// are left on the source.
func (m *Migration) Step(ctx context.Context, n int) (left int64, err error) {
	keys, err := m.src.ClusterGetKeysInSlot(ctx, m.slot, n).Result()
	if err != nil {
		return 0, fmt.Errorf("rediscluster: keys of slot %d: %w", m.slot, err)
	}
	if len(keys) > 0 {
		host, port, _ := net.SplitHostPort(m.dst.Options().Addr)
		args := []any{"MIGRATE", host, port, "", 0, 5000, "REPLACE", "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := m.src.Do(ctx, args...).Err(); err != nil {
			return 0, fmt.Errorf("rediscluster: MIGRATE %d keys of slot %d: %w", len(keys), m.slot, err)
		}
		m.Moved += len(keys)
	}
	return m.src.ClusterCountKeysInSlot(ctx, m.slot).Result()
}

// Finish moves the keys left, in batches of batch with pause between them,
// then assigns the slot to the destination on every master.
func (m *Migration) Finish(ctx context.Context, batch int, pause time.Duration) error {
	defer m.close()
	for {
		left, err := m.Step(ctx, batch)
		if err != nil {
			return err
		}
		if left == 0 {
			break
		}
		time.Sleep(pause)
	}
	for _, cl := range append([]*redis.Client{m.dst, m.src}, m.others...) {
		if err := cl.Do(ctx, "CLUSTER", "SETSLOT", m.slot, "NODE", m.dstID).Err(); err != nil {
			return fmt.Errorf("rediscluster: assign slot %d on %s: %w", m.slot, cl.Options().Addr, err)
		}
	}
	return nil
}

func (m *Migration) close() {
	for _, cl := range append([]*redis.Client{m.src, m.dst}, m.others...) {
		if cl != nil {
			_ = cl.Close()
		}
	}
}

// slotOwner asks the first reachable node who serves slot (CLUSTER
// SHARDS: CLUSTER SLOTS is deprecated since Redis 7).
func (c *Cluster) slotOwner(ctx context.Context, slot int) (string, error) {
	shards, err := c.client.ClusterShards(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("rediscluster: CLUSTER SHARDS: %w", err)
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int64(slot) < r.Start || int64(slot) > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" {
					return net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)), nil
				}
			}
		}
	}
	return "", fmt.Errorf("rediscluster: slot %d has no owner", slot)
}

// Index is the position in Addrs of the master at addr, or -1.
func (c *Cluster) Index(addr string) int {
	for i, a := range c.addrs {
		if a == addr {
			return i
		}
	}
	return -1
}

// KeysOnMaster counts the keys matching pattern on each master (SCAN), by
// address.
func (c *Cluster) KeysOnMaster(ctx context.Context, pattern string) (map[string]int, error) {
	out := map[string]int{}
	for _, addr := range c.addrs {
		cl := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
		var cursor uint64
		for {
			keys, next, err := cl.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				_ = cl.Close()
				return nil, fmt.Errorf("rediscluster: SCAN %s: %w", addr, err)
			}
			out[addr] += len(keys)
			if cursor = next; cursor == 0 {
				break
			}
		}
		_ = cl.Close()
	}
	return out, nil
}
