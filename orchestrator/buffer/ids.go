package buffer

import (
	"crypto/rand"
	"sync"
)

// idPool hands out random version-4 UUIDs (RFC 9562) for generated
// messageIds from crypto/rand bytes read a block at a time: one read per
// 256 ids instead of one per id (google/uuid's EnableRandPool, without
// turning it on for the whole process). The bytes are as random as
// uuid.NewString's; only the reads are batched.
type idPool struct {
	mu  sync.Mutex
	buf [16 * 256]byte
	off int
}

// ids is the buffer's id source.
var ids = &idPool{off: 16 * 256}

// next returns a new random UUID in its canonical 36-character form.
func (p *idPool) next() string {
	var u [16]byte
	p.mu.Lock()
	if p.off == len(p.buf) {
		_, _ = rand.Read(p.buf[:]) // crypto/rand.Read never fails (Go ≥ 1.24: it crashes instead)
		p.off = 0
	}
	copy(u[:], p.buf[p.off:p.off+16])
	p.off += 16
	p.mu.Unlock()
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10
	return formatUUID(u)
}

// formatUUID renders u as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func formatUUID(u [16]byte) string {
	const hex = "0123456789abcdef"
	var s [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hex[c>>4], hex[c&0x0f]
		j += 2
	}
	return string(s[:])
}
