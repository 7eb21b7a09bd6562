package signature

import (
	"net/http"
	"time"

	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

// The signing itself lives in package orchestrator/hmacsig (standard library
// only, so senders need not import this Fiber-side package); the names
// below keep this package's API.

// The request headers of the HMAC and token schemes.
const (
	HeaderTimestamp     = hmacsig.HeaderTimestamp
	HeaderSignature     = hmacsig.HeaderSignature
	HeaderAuthorization = "Authorization"
	// HeaderSignatureVersion selects the signed string: absent or "1" is
	// timestamp + "." + body (the seed's scheme); "2" is
	// timestamp + "." + METHOD + " " + target + "." + body, where target is
	// the path with its query exactly as sent.
	HeaderSignatureVersion = hmacsig.HeaderSignatureVersion
)

// SignaturePrefix may precede the hex signature in X-Signature.
const SignaturePrefix = "sha256="

// Sign returns the X-Timestamp and X-Signature values for body sent at ts
// (hmacsig.Sign).
func Sign(secret []byte, ts time.Time, body []byte) (timestamp, signature string) {
	return hmacsig.Sign(secret, ts, body)
}

// SignRequest sets X-Timestamp and X-Signature on req for body, which must
// be exactly the bytes req will send. It does not set req.Body
// (hmacsig.SignRequest).
func SignRequest(req *http.Request, secret []byte, now time.Time, body []byte) {
	hmacsig.SignRequest(req, secret, now, body)
}

// SignV2 returns X-Timestamp and X-Signature of a version-2 signature
// (send it with X-Signature-Version: 2; hmacsig.SignV2).
func SignV2(secret []byte, ts time.Time, method, target string, body []byte) (timestamp, signature string) {
	return hmacsig.SignV2(secret, ts, method, target, body)
}

// SignRequestV2 sets the version-2 headers on req for body, signing
// req.Method and req.URL.RequestURI() (hmacsig.SignRequestV2).
func SignRequestV2(req *http.Request, secret []byte, now time.Time, body []byte) {
	hmacsig.SignRequestV2(req, secret, now, body)
}
