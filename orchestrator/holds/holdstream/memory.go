package holdstream

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// monitorMemory logs a warning when the live heap passes HeapWarn or the
// resident set passes RSSWarn (once per crossing), with the stream count.
func (h *Hub) monitorMemory() {
	t := time.NewTicker(h.cfg.MemoryCheck)
	defer t.Stop()
	var heapHigh, rssHigh bool
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		heap, rss := heapBytes(), rssBytes()
		heapHigh = h.warnOnce(heapHigh, heap > h.cfg.HeapWarn, "holdstream: heap above the warning level", "heap_bytes", heap, h.cfg.HeapWarn)
		rssHigh = h.warnOnce(rssHigh, rss > h.cfg.RSSWarn, "holdstream: resident memory above the warning level", "rss_bytes", rss, h.cfg.RSSWarn)
	}
}

// warnOnce logs when high turns true and returns the new state.
func (h *Hub) warnOnce(was, high bool, msg, key string, v, limit uint64) bool {
	if high && !was {
		h.cfg.Logger.Warn(msg, key, v, "limit_bytes", limit, "streams", h.Streams())
	}
	return high
}

// heapBytes is the heap memory occupied by live and not yet swept objects.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// rssBytes is the resident set size from /proc/self/statm (0 elsewhere).
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

// burst counts the stream opens since memory was last returned to the OS.
type burst struct {
	mu    sync.Mutex
	opens int
	last  time.Time // the latest open
}

func (b *burst) opened(now time.Time) {
	b.mu.Lock()
	b.opens++
	b.last = now
	b.mu.Unlock()
}

// over reports (and forgets) a burst of at least min opens that ended
// quiet ago or earlier.
func (b *burst) over(now time.Time, min int, quiet time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opens < min || now.Sub(b.last) < quiet {
		return false
	}
	b.opens = 0
	return true
}

// releaseAfterBursts returns the memory of a burst of stream opens to the
// OS once the burst is over. Thousands of clients opening at once (every
// board reconnecting after a deploy) each hold a request in flight — a
// grown goroutine stack, fasthttp's request context and buffers — that is
// free again once their streams are set up, but an idle hub allocates too
// little for a garbage collection to come soon, and the runtime returns
// free memory only after one: the process would stay at the burst's size
// for minutes. One forced collection per burst (debug.FreeOSMemory) ends
// that.
func (h *Hub) releaseAfterBursts() {
	if h.cfg.ReleaseBurst < 0 {
		return
	}
	t := time.NewTicker(max(h.cfg.ReleaseQuiet/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		if h.burst.over(h.cfg.Now(), h.cfg.ReleaseBurst, h.cfg.ReleaseQuiet) {
			debug.FreeOSMemory()
			h.m.release.Inc()
		}
	}
}
