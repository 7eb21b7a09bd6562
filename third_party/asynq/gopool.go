// Copyright 2020 Kentaro Hibino. All rights reserved.
// Use of this source code is governed by a MIT license
// that can be found in the LICENSE file.

package asynq

import (
	"sync"
	"time"
)

// goPool runs functions on goroutines it keeps for reuse (flowgate patch,
// PATCH.md): the processor starts no goroutine per task, and a reused
// goroutine keeps the stack its earlier tasks grew, where a new one grows
// its stack again through the handler and the Redis client. A goroutine
// idle for goPoolIdle, or when the pool is closed, exits.
type goPool struct {
	work chan func() // unbuffered: only an idle goroutine takes a function
	done chan struct{}
	once sync.Once
}

// goPoolIdle is how long an idle goroutine of a goPool waits for work.
const goPoolIdle = 10 * time.Second

func newGoPool() *goPool {
	return &goPool{work: make(chan func()), done: make(chan struct{})}
}

// Go runs f on an idle goroutine of the pool, or on a new one.
func (g *goPool) Go(f func()) {
	select {
	case g.work <- f:
	default:
		go g.run(f)
	}
}

func (g *goPool) run(f func()) {
	var idle *time.Timer
	for {
		f()
		if idle == nil {
			idle = time.NewTimer(goPoolIdle)
		} else {
			idle.Reset(goPoolIdle)
		}
		select {
		case f = <-g.work:
		case <-idle.C:
			return
		case <-g.done:
			idle.Stop()
			return
		}
	}
}

// close makes the pool's idle goroutines exit, and the busy ones once
// their function returns; a later Go runs f on a new goroutine.
func (g *goPool) close() {
	g.once.Do(func() { close(g.done) })
}
