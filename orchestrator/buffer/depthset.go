package buffer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/flowgate/flowgate/orchestrator/shard"
)

// depthSet is the buffer's backpressure state over its shards: one
// depthGauge (counter, credit hash, place credit) per shard, each limited
// to its share of MaxQueueSize (shareOf): the shares sum to the maximum,
// so the counters bound the total exactly, and no script needs the keys of
// two shards. The gauge exported (flowgate_buffer_queue_depth) and the
// levels logged are the sum of the shards' last figures. With one shard it
// is the one gauge of before.
type depthSet struct {
	gauges    []*depthGauge
	rot       shard.Rotation // where an unkeyed enqueue looks for credit first
	instance  string
	flush     time.Duration
	reconcile time.Duration
	log       *slog.Logger
	th        Thresholds
	onDepth   func(depth int64)

	mu     sync.Mutex // values, level
	values []int64
	level  string

	stop chan struct{}
	done chan struct{}
}

// shareOf is shard i's share of max over n shards: max/n, one more for
// the first max%n shards. The shares sum to max.
func shareOf(max int64, i, n int) int64 {
	s := max / int64(n)
	if int64(i) < max%int64(n) {
		s++
	}
	return s
}

// setShard records shard i's figure and publishes the sum.
func (s *depthSet) setShard(i int, v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[i] = v
	var sum int64
	for _, x := range s.values {
		sum += x
	}
	if s.onDepth != nil {
		s.onDepth(sum)
	}
	s.level = logLevel(s.log, s.th, s.level, sum)
}

// Value is the sum of the shards' last figures.
func (s *depthSet) Value() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum int64
	for _, x := range s.values {
		sum += x
	}
	return sum
}

// gauge is shard i's gauge; an index out of range (a message written
// under another shard count) counts on shard 0, which the reconcile heals.
func (s *depthSet) gauge(i int) *depthGauge {
	if i < 0 || i >= len(s.gauges) {
		return s.gauges[0]
	}
	return s.gauges[i]
}

// leave counts n messages of shard i that finished.
func (s *depthSet) leave(i int, n int64) { s.gauge(i).leave(n) }

// take uses one place of any shard's credit, looking at the shards in
// round-robin order; it answers the shard, or -1 when none has credit.
func (s *depthSet) take() int {
	if len(s.gauges) == 1 {
		if s.gauges[0].credit.take() {
			return 0
		}
		return -1
	}
	for _, i := range s.rot.Order(len(s.gauges)) {
		if s.gauges[i].credit.take() {
			return i
		}
	}
	return -1
}

// held is the place credit this instance holds over every shard.
func (s *depthSet) held() int64 {
	var n int64
	for _, g := range s.gauges {
		n += g.credit.n.Load()
	}
	return n
}

// read is Asynq's figure: the four queues' sizes (one round trip).
func (s *depthSet) read(ctx context.Context) (int64, error) { return s.gauges[0].read(ctx) }

// flushLeft flushes every shard (one leaveScript call each that has
// something to settle); a shard that fails is tried again next time.
func (s *depthSet) flushLeft(ctx context.Context) error {
	var errs []error
	for _, g := range s.gauges {
		errs = append(errs, g.flushLeft(ctx))
	}
	return errors.Join(errs...)
}

// resync re-sets every shard's counter: Asynq's figure (the four queues
// hold every shard's messages, Asynq's queues are not sharded) is split
// evenly over the shards (shareOf, so a shard's share never exceeds its
// maximum while the total is within MaxQueueSize), plus each shard's
// fresh credit (resyncScript). A shard whose messages were more than its
// share finds its counter low and, as its messages finish, clamped at 0
// (leaveScript): those decrements are lost, so the sum of the counters
// reads above the queues — QUEUE_FULL early by at most the imbalance,
// never late — until the next resync. Each shard's step holds its own
// admitMu (one round trip), not the others'.
func (s *depthSet) resync(ctx context.Context) error {
	if err := s.flushLeft(ctx); err != nil {
		return err
	}
	v, err := s.read(ctx)
	if err != nil {
		return err
	}
	if len(s.gauges) == 1 {
		return s.gauges[0].resyncTo(ctx, v)
	}
	var errs []error
	for i, g := range s.gauges {
		errs = append(errs, g.resyncTo(ctx, shareOf(v, i, len(s.gauges))))
	}
	return errors.Join(errs...)
}

// start runs the flush and resync loop until stopAndFlush.
func (s *depthSet) start() {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop()
}

func (s *depthSet) loop() {
	defer close(s.done)
	fl, rs := time.NewTicker(s.flush), time.NewTicker(s.reconcile)
	defer fl.Stop()
	defer rs.Stop()
	for {
		var err error
		select {
		case <-s.stop:
			return
		case <-fl.C:
			err = s.timed(s.flushLeft)
		case <-rs.C:
			err = s.timed(s.resync)
		}
		if err != nil {
			s.log.Warn("buffer: queue depth upkeep failed", "err", err)
		}
	}
}

func (s *depthSet) timed(f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return f(ctx)
}

// stopAndFlush ends the loop and subtracts what is left, giving back
// every shard's place credit.
func (s *depthSet) stopAndFlush() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop = nil
	for _, g := range s.gauges {
		if err := s.timed(func(ctx context.Context) error { return g.subtract(ctx, true) }); err != nil {
			s.log.Warn("buffer: queue depth upkeep failed", "err", err)
		}
	}
}
