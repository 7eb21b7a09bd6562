package hmacsig_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

func hexMAC(secret, msg string) string {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(msg))
	return hex.EncodeToString(h.Sum(nil))
}

// Both versions sign exactly the documented strings.
func TestSignFormulas(t *testing.T) {
	t.Parallel()
	ts := time.Unix(1_700_000_123, 0)
	gotTS, sig := hmacsig.Sign([]byte("s3cret-0123456789"), ts, []byte(`{"a":1}`))
	require.Equal(t, "1700000123", gotTS)
	require.Equal(t, hexMAC("s3cret-0123456789", `1700000123.{"a":1}`), sig)

	_, sig2 := hmacsig.SignV2([]byte("s3cret-0123456789"), ts, "POST", "/q/x?y=1", []byte("b"))
	require.Equal(t, hexMAC("s3cret-0123456789", "1700000123.POST /q/x?y=1.b"), sig2)
}

// The delivery signature signs the timestamp, message id, attempt and
// body, newline-separated; the fixed vector is the one the Node-RED
// palette's and the n8n node's tests check their own against.
func TestDeliveryMACFormula(t *testing.T) {
	t.Parallel()
	got := hex.EncodeToString(hmacsig.DeliveryMAC([]byte("s3cret"), "1700000000", "m-1", "2", []byte(`{"a":1}`)))
	require.Equal(t, hexMAC("s3cret", "1700000000\nm-1\n2\n{\"a\":1}"), got)
	require.Equal(t, "219787482cb65054b9ded803de564fff181c7db29079c8418232455475f2996b", got)
	require.NotEqual(t, got, hex.EncodeToString(hmacsig.DeliveryMAC([]byte("s3cret"), "1700000000", "m-1", "3", []byte(`{"a":1}`))),
		"another attempt of the same message signs otherwise")

	h := http.Header{}
	h.Set(hmacsig.HeaderTimestamp, "1700000000")
	h.Set(hmacsig.HeaderMessageID, "m-1")
	h.Set(hmacsig.HeaderAttempt, "2")
	hmacsig.SignDelivery(h, []byte("s3cret"), []byte(`{"a":1}`))
	require.Equal(t, got, h.Get(hmacsig.HeaderDeliverySignature))
}

func TestSignRequestSetsHeaders(t *testing.T) {
	t.Parallel()
	ts := time.Unix(1_700_000_000, 0)
	req, err := http.NewRequest(http.MethodPost, "http://h/path?q=1", nil)
	require.NoError(t, err)
	hmacsig.SignRequest(req, []byte("k"), ts, []byte("body"))
	require.Equal(t, "1700000000", req.Header.Get(hmacsig.HeaderTimestamp))
	require.Equal(t, hexMAC("k", "1700000000.body"), req.Header.Get(hmacsig.HeaderSignature))
	require.Empty(t, req.Header.Get(hmacsig.HeaderSignatureVersion))

	hmacsig.SignRequestV2(req, []byte("k"), ts, []byte("body"))
	require.Equal(t, "2", req.Header.Get(hmacsig.HeaderSignatureVersion))
	require.Equal(t, hexMAC("k", "1700000000.POST /path?q=1.body"), req.Header.Get(hmacsig.HeaderSignature))
}

// Keyed signs what MAC and MACV2 sign, whatever state its pool hands
// out (a reused one is Reset to the keyed start), from many goroutines
// at once; the secret is copied.
func TestKeyedMatchesMAC(t *testing.T) {
	t.Parallel()
	secret := []byte("s3cret-0123456789")
	k := hmacsig.NewKeyed(secret)
	secret[0] = 'X' // the caller's later change does not reach k
	want := []byte("s3cret-0123456789")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				ts, body := strconv.Itoa(1_700_000_000+i), []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))
				if got := k.MAC(ts, body); !bytes.Equal(got, hmacsig.MAC(want, ts, body)) {
					t.Errorf("MAC %s %s", ts, body)
					return
				}
				if got := k.MACV2(ts, "POST", "/ack", body); !bytes.Equal(got, hmacsig.MACV2(want, ts, "POST", "/ack", body)) {
					t.Errorf("MACV2 %s %s", ts, body)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, hexMAC("s3cret-0123456789", `1700000123.{"a":1}`), hex.EncodeToString(k.MAC("1700000123", []byte(`{"a":1}`))))
}

func BenchmarkMAC(b *testing.B) {
	secret, body := []byte("s3cret-0123456789abcdef0123456789"), []byte(`{"queue_id":"7b1c2f0e-8a7d-4f4b-9c55-1e2d3c4b5a69","experityActions":{}}`)
	k := hmacsig.NewKeyed(secret)
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hmacsig.MACV2(secret, "1700000123", "POST", "/ack", body)
		}
	})
	b.Run("keyed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.MACV2("1700000123", "POST", "/ack", body)
		}
	})
}
