package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// backend is the Redis flowgate runs on: one go-redis client for its own
// keys and the asynq client/inspector, and the connection option asynq
// servers and Asynqmon build their pools from. Both come from the same
// RedisConnOpt, so they always point at the same server.
type backend struct {
	Client  redis.UniversalClient
	ConnOpt asynq.RedisConnOpt
	Mode    string // embedded, url, cluster, sentinel
	mini    *miniredis.Miniredis
	// stopClock ends the embedded store's clock (nil otherwise).
	stopClock func()
}

// embeddedClockTick is how often the embedded store's TTLs are moved on
// by the wall clock: every key expires at most this late (a real Redis
// expires on access and in its active cycle, within ~100 ms).
const embeddedClockTick = 200 * time.Millisecond

// driveClock makes the embedded store's TTLs follow the wall clock.
// miniredis never expires a key on its own: its TTLs move only when
// FastForward is called, so without this a 5 s hold, a cooldown, a session
// cache or a replay-guard key would live until the process exits (holds
// never released, memory growing in a long trial). Every tick moves every
// TTL by the time measured since the last one (now is injected for tests);
// FastForward walks every key, a few milliseconds for the few thousand a
// trial holds, and runs under miniredis' lock like any command. It returns
// the function that stops it.
func driveClock(mini *miniredis.Miniredis, every time.Duration, now func() time.Time) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	// The starting point is read here, not in the goroutine: a goroutine
	// scheduled late would otherwise start from a later clock and lose the
	// time that passed before it ran.
	last := now()
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				cur := now()
				if d := cur.Sub(last); d > 0 {
					mini.FastForward(d)
				}
				last = cur
			}
		}
	}()
	return func() { close(done); <-finished }
}

func openRedis(ctx context.Context, cfg Config, log *slog.Logger) (*backend, error) {
	b := &backend{}
	switch {
	case cfg.RedisURL != "":
		opt, err := asynq.ParseRedisURI(cfg.RedisURL)
		if err != nil { // the parse error quotes the URL, password included: do not pass it on
			return nil, &ConfigError{Var: "REDIS_URL", Err: errors.New("not a redis URL asynq accepts (redis://[:password@]host:port/db)")}
		}
		switch o := opt.(type) {
		case asynq.RedisClientOpt:
			o.PoolSize = cfg.RedisPoolSize
			opt = o
		case asynq.RedisFailoverClientOpt:
			o.PoolSize = cfg.RedisPoolSize
			opt = o
		}
		b.ConnOpt, b.Mode = opt, "url"
	case len(cfg.RedisClusterAddrs) > 0:
		b.ConnOpt = asynq.RedisClusterClientOpt{Addrs: cfg.RedisClusterAddrs, Password: cfg.RedisPassword}
		b.Mode = "cluster"
	case len(cfg.RedisSentinelAddrs) > 0:
		b.ConnOpt = asynq.RedisFailoverClientOpt{MasterName: cfg.RedisSentinelMaster,
			SentinelAddrs: cfg.RedisSentinelAddrs, Password: cfg.RedisPassword, PoolSize: cfg.RedisPoolSize}
		b.Mode = "sentinel"
	default:
		mini := miniredis.NewMiniRedis()
		if err := mini.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("start embedded redis: %w", err)
		}
		b.mini, b.Mode = mini, "embedded"
		b.stopClock = driveClock(mini, embeddedClockTick, time.Now)
		b.ConnOpt = asynq.RedisClientOpt{Addr: mini.Addr(), PoolSize: cfg.RedisPoolSize}
		log.Warn("EMBEDDED REDIS: nothing is durable — every queued booking, task, hold and dead letter is lost when this process exits. Set REDIS_URL (or REDIS_CLUSTER_ADDRS / REDIS_SENTINEL_ADDRS) for anything but a trial.",
			"addr", mini.Addr())
	}
	client, err := sharedClient(b.ConnOpt)
	if err != nil {
		b.close()
		return nil, err
	}
	b.Client = client
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		b.close()
		if redisAuthError(err) {
			return nil, fmt.Errorf("redis (%s) is reachable but refused the credentials: %w (the password in REDIS_URL, or REDIS_PASSWORD)", b.Mode, err)
		}
		return nil, fmt.Errorf("redis (%s) not reachable: %w", b.Mode, err)
	}
	return b, nil
}

// redisAuthError tells a Redis that answered but refused who we are
// (NOAUTH: no password sent; WRONGPASS: a wrong one; the older
// "invalid password") from one that did not answer at all.
func redisAuthError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"NOAUTH", "WRONGPASS", "ERR invalid password", "ERR AUTH"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// sharedClient builds the go-redis client of flowgate's own keys from the
// same option asynq uses, with one difference: no automatic retries.
// go-redis re-sends a command whose reply timed out after it was written;
// for a Lua transition (claim, FAIL, reserve) that runs it twice — a second
// claim batch nobody receives, a FAIL answered 409 because the first run
// already applied it. A failure instead surfaces as 503 unavailable and the
// caller retries knowingly. ContextTimeoutEnabled makes go-redis honour a
// context's deadline (without it a hung Redis holds a request for the
// socket timeouts, 3 s read + 4 s pool wait, whatever the handler's budget).
//
// Asynq's servers and Asynqmon build their own clients from the
// RedisConnOpt (asynq's option types have no such field); they call Redis
// with contexts that carry no deadline, so the flag would change nothing
// there: their socket timeouts bound them. Asynq's Client and Inspector
// use this shared client.
func sharedClient(opt asynq.RedisConnOpt) (redis.UniversalClient, error) {
	switch o := opt.(type) {
	case asynq.RedisClientOpt:
		return redis.NewClient(&redis.Options{Network: o.Network, Addr: o.Addr, Username: o.Username, Password: o.Password,
			DB: o.DB, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			PoolSize: o.PoolSize, TLSConfig: o.TLSConfig, MaxRetries: -1, ContextTimeoutEnabled: true}), nil
	case asynq.RedisFailoverClientOpt:
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: o.MasterName, SentinelAddrs: o.SentinelAddrs,
			SentinelUsername: o.SentinelUsername, SentinelPassword: o.SentinelPassword, Username: o.Username,
			Password: o.Password, DB: o.DB, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout,
			WriteTimeout: o.WriteTimeout, PoolSize: o.PoolSize, TLSConfig: o.TLSConfig, MaxRetries: -1, ContextTimeoutEnabled: true}), nil
	case asynq.RedisClusterClientOpt:
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: o.Addrs, MaxRedirects: o.MaxRedirects,
			Username: o.Username, Password: o.Password, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout,
			WriteTimeout: o.WriteTimeout, TLSConfig: o.TLSConfig, MaxRetries: -1, ContextTimeoutEnabled: true}), nil
	}
	return nil, fmt.Errorf("unsupported redis connection option %T", opt)
}

func (b *backend) ping(ctx context.Context) error { return b.Client.Ping(ctx).Err() }

// pingMasters is /readyz's Redis check. On one server or behind Sentinel
// it is a PING (a Sentinel-managed master that is down fails it until a
// replica is promoted and the client has followed). On a Cluster it pings
// every master the client knows of: err only when none answers, and the
// addresses of those that do not (for the log) in down.
// clusterLayoutBudget is the part of /readyz's budget the Cluster's layout
// reload may take before the layout the client holds is used.
const clusterLayoutBudget = 300 * time.Millisecond

func (b *backend) pingMasters(ctx context.Context) (up int, down []string, err error) {
	cc, ok := b.Client.(*redis.ClusterClient)
	if !ok {
		if err := b.ping(ctx); err != nil {
			return 0, nil, err
		}
		return 1, nil, nil
	}
	var mu sync.Mutex
	var errs []error
	// ForEachMaster first reloads the layout from a random node and falls
	// back to the one it holds when that fails; a stopped node would hold
	// the reload until the deadline and leave the pings no time. So the
	// reload gets part of the budget and the pings the outer one.
	layoutCtx, cancel := context.WithTimeout(ctx, clusterLayoutBudget)
	defer cancel()
	ferr := cc.ForEachMaster(layoutCtx, func(_ context.Context, node *redis.Client) error {
		perr := node.Ping(ctx).Err() // the outer budget, not what the reload left
		mu.Lock()
		defer mu.Unlock()
		if perr != nil {
			down = append(down, node.Options().Addr)
			errs = append(errs, perr)
		} else {
			up++
		}
		return nil
	})
	switch {
	case ferr != nil: // the cluster's layout could not be read
		return 0, nil, ferr
	case up == 0:
		return 0, down, fmt.Errorf("no cluster master answered: %w", errors.Join(errs...))
	}
	return up, down, nil
}

func (b *backend) close() error {
	var errs []error
	if b.Client != nil {
		errs = append(errs, b.Client.Close())
	}
	if b.stopClock != nil {
		b.stopClock()
		b.stopClock = nil
	}
	if b.mini != nil {
		b.mini.Close()
	}
	return errors.Join(errs...)
}
