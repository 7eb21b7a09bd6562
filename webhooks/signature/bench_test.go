package signature_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// BenchmarkVerify measures an accepted HMAC request. Each iteration has its
// own body so the Redis guard never reports a replay; the requests are
// signed before the timer starts.
func BenchmarkVerify(b *testing.B) {
	guards := map[string]func(b *testing.B) signature.ReplayGuard{
		"noop": func(*testing.B) signature.ReplayGuard { return noopGuard },
		"redis": func(b *testing.B) signature.ReplayGuard {
			return signature.NewRedisReplayGuard(redistest.New(b).Client, testPrefix)
		},
	}
	for _, name := range []string{"noop", "redis"} {
		b.Run("hmac/"+name, func(b *testing.B) {
			v := newHMAC(b, guards[name](b))
			type req struct {
				h    http.Header
				body []byte
			}
			reqs := make([]req, b.N)
			for i := range reqs {
				body := fmt.Appendf(nil, `{"queue_id":"%08d-0000-4000-8000-000000000000","encounter_id":"e1","experityActions":{"codes":["99213"]}}`, i)
				reqs[i] = req{signed(testSecret, testNow, body), body}
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := v.Verify(ctx, reqs[i].h.Get, reqs[i].body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("token", func(b *testing.B) {
		v, err := signature.New(signature.Config{Mode: signature.ModeToken, Token: testToken})
		if err != nil {
			b.Fatal(err)
		}
		h := headers("Authorization", "Bearer "+testToken)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := v.Verify(ctx, h.Get, ackBody); err != nil {
				b.Fatal(err)
			}
		}
	})
}
