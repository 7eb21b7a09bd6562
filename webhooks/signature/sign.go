package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// The request headers of the HMAC and token schemes.
const (
	HeaderTimestamp     = "X-Timestamp"
	HeaderSignature     = "X-Signature"
	HeaderAuthorization = "Authorization"
	// HeaderSignatureVersion selects the signed string: absent or "1" is
	// timestamp + "." + body (the seed's scheme); "2" is
	// timestamp + "." + METHOD + " " + target + "." + body, where target is
	// the path with its query exactly as sent.
	HeaderSignatureVersion = "X-Signature-Version"
)

// SignaturePrefix may precede the hex signature in X-Signature.
const SignaturePrefix = "sha256="

// Sign returns the X-Timestamp and X-Signature values for body sent at ts.
func Sign(secret []byte, ts time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	return timestamp, hex.EncodeToString(mac(secret, timestamp, body))
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
	return timestamp, hex.EncodeToString(macV2(secret, timestamp, method, target, body))
}

// SignRequestV2 sets the version-2 headers on req for body, signing
// req.Method and req.URL.RequestURI().
func SignRequestV2(req *http.Request, secret []byte, now time.Time, body []byte) {
	ts, sig := SignV2(secret, now, req.Method, req.URL.RequestURI(), body)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sig)
	req.Header.Set(HeaderSignatureVersion, "2")
}

// macV2 is HMAC-SHA256(secret, timestamp + "." + METHOD + " " + target + "." + body).
func macV2(secret []byte, timestamp, method, target string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write([]byte(method))
	h.Write([]byte{' '})
	h.Write([]byte(target))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// mac is HMAC-SHA256(secret, timestamp + "." + body).
func mac(secret []byte, timestamp string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
