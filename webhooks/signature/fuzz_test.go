package signature_test

import (
	"context"
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/signature"
)

func FuzzVerify(f *testing.F) {
	ts, sig := signature.Sign(testSecret, testNow, ackBody)
	f.Add(ts, sig, "Bearer "+testToken, ackBody)
	f.Add(ts, "sha256="+sig, "", ackBody)
	f.Add(ts, strings.ToUpper(sig), "bearer x", []byte{})
	f.Add("", "", "", []byte(nil))
	f.Add("-1", "sha256=", "Bearer", []byte("\x00\xff"))
	f.Add("99999999999999999999", "zz", " Bearer  "+testToken+" ", []byte("{}"))
	f.Add("1700000300", sig, "Basic abc", ackBody)

	failing := signature.ReplayGuardFunc(func(context.Context, string, time.Duration) (bool, error) {
		return false, errors.New("redis down")
	})
	hm := newHMAC(f, noopGuard)
	down := newHMAC(f, failing)
	tok, err := signature.New(signature.Config{Mode: signature.ModeToken, Token: testToken})
	if err != nil {
		f.Fatal(err)
	}
	none, err := signature.New(signature.Config{Mode: signature.ModeNone})
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, ts, sig, auth string, body []byte) {
		get := headers("X-Timestamp", ts, "X-Signature", sig, "Authorization", auth).Get
		for name, v := range map[string]*signature.Verifier{"hmac": hm, "down": down, "token": tok, "none": none} {
			err := v.Verify(context.Background(), get, body)
			if err == nil {
				if name == "hmac" && !validMAC(ts, sig, body) {
					t.Fatalf("hmac accepted a wrong signature: ts=%q sig=%q", ts, sig)
				}
				if name == "down" {
					t.Fatalf("accepted with the replay store down: ts=%q sig=%q", ts, sig)
				}
				continue
			}
			var e *contracts.Error
			if !errors.As(err, &e) {
				t.Fatalf("%s: %T %v is not a *contracts.Error", name, err, err)
			}
			if e.Code != contracts.CodeUnauthorized && e.Code != contracts.CodeUnavailable {
				t.Fatalf("%s: code %s", name, e.Code)
			}
			if r, _ := e.Details["reason"].(string); r == "" || e.Message == "" {
				t.Fatalf("%s: no reason or message: %v", name, e)
			}
		}
	})
}

// validMAC recomputes the signature independently of the package.
func validMAC(ts, sig string, body []byte) bool {
	ts, sig = strings.TrimSpace(ts), strings.TrimSpace(sig)
	if hasPrefixFold(sig, "sha256=") {
		sig = sig[len("sha256="):]
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	exp, _ := hex.DecodeString(opensslFormula(string(testSecret), ts, string(body)))
	return hmac.Equal(got, exp)
}
