// Package shard spreads one subsystem's Redis keys over several hash tags
// (REDIS_SHARDS), so that on Redis Cluster its scripts run on several
// masters instead of the one that owns a single tag's slot.
//
// A subsystem (tasks, holds, the buffer) keeps every key one script touches
// under one tag, as before; it now has n tags instead of one, and decides
// per operation which tag (shard) a key lives under, with Of on the key
// that must stay exact (an encounter, a slot, an idempotency key).
//
// With n == 1 the one tag is "{<name>}": today's keys exactly, nothing to
// migrate. With n > 1, shard i's tag is "{<name>:<i>.<salt>}" where salt is
// the smallest number that puts the tag's cluster slot in the i-th of n
// equal ranges of the 16384 slots. A cluster made by `redis-cli --cluster
// create` gives each master one contiguous, equal range, so n shards land
// on min(n, masters) masters, evenly when n is a multiple of the masters —
// not by chance, as n plain tags would. The tags are a pure function of
// (name, i, n): every instance computes the same ones.
package shard

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync/atomic"
)

// MaxShards bounds REDIS_SHARDS: more tags than masters buy nothing, and
// every sweep and listing visits each shard.
const MaxShards = 256

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// Set is the shards of one subsystem.
type Set struct {
	name string
	tags []string
}

// New returns the n shards of subsystem name (a short word such as "tasks",
// without '{', '}' or ':').
func New(name string, n int) (Set, error) {
	if name == "" {
		return Set{}, errors.New("shard: empty name")
	}
	for _, r := range name {
		if r == '{' || r == '}' || r == ':' {
			return Set{}, fmt.Errorf("shard: name %q must not contain '{', '}' or ':'", name)
		}
	}
	if n < 1 || n > MaxShards {
		return Set{}, fmt.Errorf("shard: %d shards: must be 1..%d", n, MaxShards)
	}
	s := Set{name: name, tags: make([]string, n)}
	if n == 1 {
		s.tags[0] = "{" + name + "}"
		return s, nil
	}
	for i := range n {
		s.tags[i] = tagOf(name, i, n)
	}
	return s, nil
}

// tagOf is shard i's tag of n > 1: the smallest salt whose tag's slot is
// in the i-th of n equal ranges.
func tagOf(name string, i, n int) string {
	lo, hi := i*Slots/n, (i+1)*Slots/n
	for salt := 0; ; salt++ {
		inner := name + ":" + strconv.Itoa(i) + "." + strconv.Itoa(salt)
		if slot := int(crc16(inner)) % Slots; slot >= lo && slot < hi {
			return "{" + inner + "}"
		}
	}
}

// Counts are the shard counts n (1..MaxShards, ascending) whose tags of
// subsystem name include tag — which REDIS_SHARDS a key carrying it can
// have been written with (a tag of one count may be another's too). None
// for a tag flowgate never makes.
func Counts(name, tag string) []int {
	if tag == "{"+name+"}" {
		return []int{1}
	}
	rest, ok := strings.CutPrefix(tag, "{"+name+":")
	if !ok || !strings.HasSuffix(rest, "}") {
		return nil
	}
	is, _, ok := strings.Cut(strings.TrimSuffix(rest, "}"), ".")
	i, err := strconv.Atoi(is)
	if !ok || err != nil || i < 0 || i >= MaxShards {
		return nil
	}
	slot := int(crc16(tag[1:len(tag)-1])) % Slots
	var out []int
	for n := max(i+1, 2); n <= MaxShards; n++ {
		if lo, hi := i*Slots/n, (i+1)*Slots/n; slot >= lo && slot < hi && tagOf(name, i, n) == tag {
			out = append(out, n)
		}
	}
	return out
}

// Must is New for names and counts already validated (tests, constants).
func Must(name string, n int) Set {
	s, err := New(name, n)
	if err != nil {
		panic(err)
	}
	return s
}

// N is the number of shards.
func (s Set) N() int { return len(s.tags) }

// Name is the subsystem's name.
func (s Set) Name() string { return s.name }

// Tag is shard i's hash tag, braces included: "{tasks}" when there is one
// shard, "{tasks:3.41}" for shard 3 of several.
func (s Set) Tag(i int) string { return s.tags[i] }

// Tags are every shard's tag, shard 0 first.
func (s Set) Tags() []string { return append([]string(nil), s.tags...) }

// Of is the shard of key: FNV-1a of the key modulo N, so every instance
// agrees. With one shard it is 0.
func (s Set) Of(key string) int {
	if len(s.tags) == 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(s.tags)))
}

// Index is the shard whose tag is tag, or -1.
func (s Set) Index(tag string) int {
	for i, t := range s.tags {
		if t == tag {
			return i
		}
	}
	return -1
}

// Slot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash
// tag — the part between the first '{' and the next '}', when not empty —
// or of the whole key, modulo 16384.
func Slot(key string) int {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return int(crc16(key)) % Slots
			}
		}
		break
	}
	return int(crc16(key)) % Slots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), the checksum Redis
// Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Rotation hands out the order in which an operation that may be served by
// any shard (a claim, a sweep's start) visits them: round robin, so that no
// shard is always asked first. The zero value is ready; it is safe for
// concurrent use.
type Rotation struct{ next atomic.Uint64 }

// Order is 0..n-1 rotated to start one past the previous call's start.
func (r *Rotation) Order(n int) []int {
	if n <= 1 {
		return []int{0}
	}
	start := int((r.next.Add(1) - 1) % uint64(n))
	out := make([]int, n)
	for i := range out {
		out[i] = (start + i) % n
	}
	return out
}
