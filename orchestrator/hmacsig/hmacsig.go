// Package hmacsig computes flowgate's HMAC-SHA256 request signatures with
// the standard library only, so that a sender (the booking path's
// completion-event webhook, test clients, the task runner) can sign
// without importing the HTTP server side: package webhooks/signature
// verifies the same signatures (and pulls in Fiber), and re-exports these
// functions under its own names.
//
// Version 1 (the seed's scheme) signs timestamp + "." + body; version 2
// signs timestamp + "." + METHOD + " " + target + "." + body, where target
// is the path with its query exactly as sent, and is announced with
// X-Signature-Version: 2. The timestamp is unix seconds in X-Timestamp;
// the signature is lowercase hex in X-Signature.
package hmacsig

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The request headers of a signed request.
const (
	HeaderTimestamp = "X-Timestamp"
	HeaderSignature = "X-Signature"
	// HeaderSignatureVersion selects the signed string: absent or "1" is
	// timestamp + "." + body; "2" is
	// timestamp + "." + METHOD + " " + target + "." + body.
	HeaderSignatureVersion = "X-Signature-Version"
	// HeaderDeliverySignature signs which delivery of the work buffer a
	// request is (DeliveryMAC): X-Signature covers the timestamp and body
	// (and in version 2 the method and target), so two messages with the
	// same payload sent in one second, or a captured request resent with
	// another X-Buffer-Message-Id or X-Buffer-Attempt, carry the same
	// X-Signature. A receiver verifies both and keys its replay guard on
	// this one.
	HeaderDeliverySignature = "X-Buffer-Signature"
	// HeaderMessageID and HeaderAttempt name the delivery.
	HeaderMessageID = "X-Buffer-Message-Id"
	HeaderAttempt   = "X-Buffer-Attempt"
)

// DeliveryMAC is HMAC-SHA256(secret, timestamp + "\n" + messageID + "\n" +
// attempt + "\n" + body), X-Buffer-Signature's value in lowercase hex:
// timestamp is the request's X-Timestamp, messageID and attempt its
// X-Buffer-Message-Id and X-Buffer-Attempt exactly as sent (header values
// hold no newline, so the fields cannot run into each other).
func DeliveryMAC(secret []byte, timestamp, messageID, attempt string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	for _, f := range []string{timestamp, messageID, attempt} {
		h.Write([]byte(f))
		h.Write([]byte{'\n'})
	}
	h.Write(body)
	return h.Sum(nil)
}

// SignDelivery sets X-Buffer-Signature on a request already signed
// (X-Timestamp set) that names its delivery in X-Buffer-Message-Id and
// X-Buffer-Attempt; body must be exactly the bytes it sends.
func SignDelivery(h http.Header, secret []byte, body []byte) {
	h.Set(HeaderDeliverySignature, hex.EncodeToString(DeliveryMAC(secret, h.Get(HeaderTimestamp),
		h.Get(HeaderMessageID), h.Get(HeaderAttempt), body)))
}

// Sign returns the X-Timestamp and X-Signature values for body sent at ts.
func Sign(secret []byte, ts time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	return timestamp, hex.EncodeToString(MAC(secret, timestamp, body))
}

// SignRequest sets X-Timestamp and X-Signature on req for body, which must
// be exactly the bytes req will send. It does not set req.Body.
func SignRequest(req *http.Request, secret []byte, now time.Time, body []byte) {
	ts, sig := Sign(secret, now, body)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sig)
}

// SignV2 returns X-Timestamp and X-Signature of a version-2 signature
// (send it with X-Signature-Version: 2).
func SignV2(secret []byte, ts time.Time, method, target string, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	return timestamp, hex.EncodeToString(MACV2(secret, timestamp, method, target, body))
}

// SignRequestV2 sets the version-2 headers on req for body, signing
// req.Method and req.URL.RequestURI().
func SignRequestV2(req *http.Request, secret []byte, now time.Time, body []byte) {
	ts, sig := SignV2(secret, now, req.Method, req.URL.RequestURI(), body)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sig)
	req.Header.Set(HeaderSignatureVersion, "2")
}

// MACV2 is HMAC-SHA256(secret, timestamp + "." + METHOD + " " + target + "." + body).
func MACV2(secret []byte, timestamp, method, target string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	writeV2(h, timestamp, method, target, body)
	return h.Sum(nil)
}

// MAC is HMAC-SHA256(secret, timestamp + "." + body).
func MAC(secret []byte, timestamp string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	writeV1(h, timestamp, body)
	return h.Sum(nil)
}

func writeV1(h hash.Hash, timestamp string, body []byte) {
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
}

func writeV2(h hash.Hash, timestamp, method, target string, body []byte) {
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write([]byte(method))
	h.Write([]byte{' '})
	h.Write([]byte(target))
	h.Write([]byte{'.'})
	h.Write(body)
}

// Keyed is MAC and MACV2 under one secret for a verifier that checks
// every request: hmac.New hashes the key and allocates on every call,
// while Keyed reuses HMAC states keyed once (a sync.Pool; Reset puts one
// back to its keyed start). Safe for concurrent use.
type Keyed struct{ pool sync.Pool }

// NewKeyed returns a Keyed for a copy of secret.
func NewKeyed(secret []byte) *Keyed {
	key := bytes.Clone(secret)
	k := &Keyed{}
	k.pool.New = func() any { return hmac.New(sha256.New, key) }
	return k
}

// MAC is MAC(secret, timestamp, body).
func (k *Keyed) MAC(timestamp string, body []byte) []byte {
	h := k.pool.Get().(hash.Hash)
	defer k.pool.Put(h)
	h.Reset()
	writeV1(h, timestamp, body)
	return h.Sum(nil)
}

// MACV2 is MACV2(secret, timestamp, method, target, body).
func (k *Keyed) MACV2(timestamp, method, target string, body []byte) []byte {
	h := k.pool.Get().(hash.Hash)
	defer k.pool.Put(h)
	h.Reset()
	writeV2(h, timestamp, method, target, body)
	return h.Sum(nil)
}
