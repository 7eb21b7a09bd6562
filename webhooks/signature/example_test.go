package signature_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/webhooks/signature"
)

func ExampleSign() {
	ts, sig := signature.Sign([]byte("0123456789abcdef"), time.Unix(1700000000, 0), []byte(`{"queue_id":"q1"}`))
	fmt.Println("X-Timestamp:", ts)
	fmt.Println("X-Signature:", sig)
	// Output:
	// X-Timestamp: 1700000000
	// X-Signature: 93400c950c009e3188d588725e066fb2a3eded7664d96a2a30ade8fa80ae1e26
}

func ExampleVerifier_Verify() {
	secret := []byte("0123456789abcdef")
	now := time.Unix(1700000000, 0)
	seen := map[string]bool{} // use NewRedisReplayGuard in production
	v, err := signature.New(signature.Config{
		Secret: secret,
		Now:    func() time.Time { return now },
		Replay: signature.ReplayGuardFunc(func(_ context.Context, sig string, _ time.Duration) (bool, error) {
			was := seen[sig]
			seen[sig] = true
			return was, nil
		}),
	})
	if err != nil {
		panic(err)
	}

	body := []byte(`{"queue_id":"q1"}`)
	req, _ := http.NewRequest(http.MethodPost, "http://flowgate/ack", nil)
	signature.SignRequest(req, secret, now, body)

	fmt.Println(v.Verify(context.Background(), req.Header.Get, body))
	err = v.Verify(context.Background(), req.Header.Get, body)
	fmt.Println(contracts.ErrorCode(err), contracts.NewErrorResponse(err, "").Error.Details["reason"])
	// Output:
	// <nil>
	// unauthorized replayed
}
