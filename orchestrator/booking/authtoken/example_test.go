package authtoken_test

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
)

func Example() {
	now := time.Date(2026, 1, 19, 15, 30, 0, 0, time.UTC)
	signer, err := authtoken.New(authtoken.Config{
		Secret: []byte("BOOKING_AUTH_SECRET of 16+ bytes"),
		Now:    func() time.Time { return now },
		Rand:   bytes.NewReader([]byte{0x5b, 0x0b, 0x1d, 0x22, 0xff, 0x73}),
	})
	if err != nil {
		panic(err)
	}
	// createPatient issues a token for the new patient …
	token, payload, _ := signer.Issue("call-session-123", "877F0034-7E09-4E35-BE0D-397E309DF2E8")
	fmt.Println(payload.Nonce, payload.ExpiresAt-payload.CreatedAt)

	// … and createAppt checks it.
	d, err := signer.Decide(authtoken.ModeSession, token, "877f0034-7e09-4e35-be0d-397e309df2e8", "")
	fmt.Println(d.Method, d.PatientGUID, err)

	now = now.Add(16 * time.Minute)
	_, err = signer.Validate(token, "877F0034-7E09-4E35-BE0D-397E309DF2E8")
	fmt.Println(authtoken.CodeOf(err), errors.Is(err, authtoken.ErrExpired))
	// Output:
	// 5b0b1d22ff73 900000
	// token 877F0034-7E09-4E35-BE0D-397E309DF2E8 <nil>
	// BOOKING_AUTH_EXPIRED true
}
