package booking_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

// The completion webhook is signed like flowgate's webhooks: X-Timestamp
// and X-Signature = hex HMAC-SHA256(secret, timestamp + "." + body).
func TestWebhookEventsSigned(t *testing.T) {
	t.Parallel()
	secret := []byte("events-secret")
	got := make(chan *http.Request, 1)
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		got <- r
	}))
	defer srv.Close()
	ev := contracts.BookingCompletedEvent{Event: contracts.EventBookingCompleted, OperationID: "op-1", PatientGUID: bt.Patient, Attempts: 3}
	require.NoError(t, booking.WebhookEvents{URL: srv.URL, Secret: secret, Now: bt.NewClock(bt.T0).Now}.Publish(ctx, ev))
	r := <-got
	ts, sig := hmacsig.Sign(secret, bt.T0, body)
	require.Equal(t, ts, r.Header.Get(hmacsig.HeaderTimestamp))
	require.Equal(t, sig, r.Header.Get(hmacsig.HeaderSignature))
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.JSONEq(t, `{"event":"booking_completed","operationId":"op-1","operationType":"","patientGUID":"`+bt.Patient+`","attempts":3,"completedAt":""}`, string(body))

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer failing.Close()
	multi := booking.MultiEvents{&bt.Events{}, booking.WebhookEvents{URL: failing.URL, Secret: secret}}
	require.ErrorContains(t, multi.Publish(ctx, ev), "answered 500")
}
