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

// mac is HMAC-SHA256(secret, timestamp + "." + body).
func mac(secret []byte, timestamp string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
