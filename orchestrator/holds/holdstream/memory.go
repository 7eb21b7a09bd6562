package holdstream

import (
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
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
