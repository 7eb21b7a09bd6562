// Copyright 2020 Kentaro Hibino. All rights reserved.
// Use of this source code is governed by a MIT license
// that can be found in the LICENSE file.

package rdb

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// scriptBatch sends the script calls that wait at the same time in one
// pipeline: one write and one read for all of them, where each worker
// would make a round trip of its own (flowgate patch, PATCH.md). A call
// arriving while a pipeline is in flight waits for the next one. No
// goroutine runs while nothing waits: the first call after an idle spell
// starts the one that flushes, which exits once none is left.
type scriptBatch struct {
	client redis.UniversalClient
	script *redis.Script

	mu      sync.Mutex
	pending []*batchCall
	running bool
}

// maxBatch bounds the calls of one pipeline.
const maxBatch = 128

type batchCall struct {
	ctx  context.Context
	keys []string
	argv []interface{}
	res  interface{}
	err  error
	done chan struct{}
}

// run is script.Run(ctx, client, keys, argv...) sent with the calls
// waiting beside it.
func (b *scriptBatch) run(ctx context.Context, keys []string, argv []interface{}) (interface{}, error) {
	c := &batchCall{ctx: ctx, keys: keys, argv: argv, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.flush()
	}
	<-c.done
	return c.res, c.err
}

// flush sends the waiting calls, pipeline after pipeline, until none is
// left.
func (b *scriptBatch) flush() {
	var calls []*batchCall
	for {
		b.mu.Lock()
		n := min(len(b.pending), maxBatch)
		if n == 0 {
			b.running = false
			b.pending = b.pending[:0]
			b.mu.Unlock()
			return
		}
		calls = append(calls[:0], b.pending[:n]...)
		b.pending = append(b.pending[:0], b.pending[n:]...)
		b.mu.Unlock()
		b.send(calls)
	}
}

// send runs calls in one pipeline (a call whose context is done is not
// sent) and answers each.
func (b *scriptBatch) send(calls []*batchCall) {
	pipe := b.client.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			continue
		}
		cmds[i] = pipe.EvalSha(c.ctx, b.script.Hash(), c.keys, c.argv...)
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(context.Background()) // each command carries its own error
	}
	for i, c := range calls {
		if cmd := cmds[i]; cmd != nil {
			c.res, c.err = cmd.Result()
			if c.err != nil && strings.HasPrefix(c.err.Error(), "NOSCRIPT") {
				// Not loaded yet (a new server, SCRIPT FLUSH): EVALSHA
				// refused it without running it; Run loads it.
				c.res, c.err = b.script.Run(c.ctx, b.client, c.keys, c.argv...).Result()
			}
		}
		close(c.done)
	}
}
