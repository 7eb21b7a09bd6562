package test

import (
	"context"
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/flowgate/flowgate/test/redistest"
)

// TestBookingCloud9RefusalsOverHTTP: the binary against the simulator.
//
// A definite Cloud9 refusal on the sync path is answered in the call as the
// original answers it — an offered slot Cloud9 refuses as taken gets the
// slot guidance (SLOT_NOT_AVAILABLE, offer_alternative_slot), an
// appointment type it does not book online CLOUD9_ERROR with
// transfer_to_agent — and nothing is queued.
//
// A queued booking Cloud9 refuses for good is not silent: booking_failed
// on Redis channel flowgate:booking:events and a signed POST to
// BOOKING_EVENTS_WEBHOOK name the caller (patient, phone, child, slot), the
// reason and the practice's next step; queue-status shows the operation
// failed with its error type and next step; flowgate_booking_failed_total
// counts it.
func TestBookingCloud9RefusalsOverHTTP(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	sim := startSim(t, 1, "off")
	hook := newEventsHook(t)
	p := startFlowgate(t, bookingEnv(db.URL(), sim, "1/1s", map[string]string{
		// flowgate's own spacing (1 s) beyond the sync budget queues a
		// booking sent right after another (queue_reason limiter_wait).
		"CLOUD9_LIMIT_MARGIN": "0s", "BOOKING_SYNC_BUDGET": "300ms",
		"BOOKING_BACKOFF_BASE": "200ms", "BOOKING_BACKOFF_MAX": "400ms",
		"BOOKING_EVENTS_WEBHOOK": hook.srv.URL + "/booking-events",
	}))
	sub := db.Client.Subscribe(context.Background(), contracts.BookingEventsChannel)
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(context.Background())
	require.NoError(t, err)

	c := newBookingClient(t, p)
	status, raw := c.post("createPatient", contracts.CreatePatientRequest{PatientFirstName: "Fay", PatientLastName: "Family",
		PhoneNumber: "412-555-0199", UUI: "call-refused"})
	require.Equal(t, http.StatusOK, status, string(raw))
	pat := strictDecode[contracts.PatientCreatedResponse](t, raw)
	offered := c.slots("call-refused", 1)
	require.GreaterOrEqual(t, len(offered), 3)
	slot, other, late := offered[0], offered[1], offered[2]

	// In the call: slot guidance for a slot Cloud9 refuses — one it offered
	// and then booked for someone else (flowgate books raw slots only among
	// those offered, so Cloud9's refusal is of a slot taken meanwhile).
	takeInSim(t, sim, pat.PatientGUID, slot)
	time.Sleep(1100 * time.Millisecond) // flowgate's SetPatient spacing is not SetAppointment's, but stay clear of both
	raw, et := c.appt(apptReq(pat.PatientGUID, pat.BookingAuthToken, slot, "Ann Family", "call-refused"))
	require.Equal(t, contracts.BookingErrCloud9, et, "the original's name for Cloud9's text: %s", truncate(raw))
	failed := strictDecode[contracts.ApptFailedResponse](t, raw)
	require.Equal(t, contracts.BookingErrSlotNotAvailable, failed.Debug.FlowgateErrorType)
	require.Equal(t, contracts.ActionOfferAlternativeSlot, failed.LLMGuidance.ActionRequired)
	require.Equal(t, cloud9sim.ResultSlotTaken, failed.Message)
	require.Equal(t, 1, failed.Debug.Attempts)

	// In the call: CLOUD9_ERROR and a transfer for an appointment type
	// Cloud9 does not book online.
	time.Sleep(1100 * time.Millisecond)
	adjust := other
	adjust.AppointmentTypeGUID = cloud9sim.AdjustmentTypeGUID
	raw, et = c.appt(apptReq(pat.PatientGUID, pat.BookingAuthToken, adjust, "Ann Family", "call-refused"))
	require.Equal(t, contracts.BookingErrCloud9, et, truncate(raw))
	failed = strictDecode[contracts.ApptFailedResponse](t, raw)
	require.Equal(t, contracts.ActionTransferToAgent, failed.LLMGuidance.ActionRequired)
	require.Equal(t, cloud9sim.ResultNoApptType, failed.Message)
	require.Zero(t, c.queueStatus().Total, "a definite refusal is never queued")
	require.Equal(t, 3, sim.state().Calls["SetAppointment"], "the one made aside and the two refused")

	// Queued (the limiter's next turn is beyond the sync budget), then
	// refused by Cloud9 in the background: failed for good at once.
	takeInSim(t, sim, pat.PatientGUID, late)
	q := c.queued(apptReq(pat.PatientGUID, pat.BookingAuthToken, late, "Ben Family", "call-refused"),
		contracts.BookingErrRateLimitedQueued)
	require.Equal(t, contracts.QueueReasonLimiterWait, q.Debug.QueueReason)

	op, all := c.waitOp(q.OperationID, contracts.OpFailed, 20*time.Second)
	const reason = "SLOT_NOT_AVAILABLE: " + cloud9sim.ResultSlotTaken
	next := contracts.FailedNextStep(contracts.OpSetAppointment, contracts.BookingErrSlotNotAvailable, false)
	require.Equal(t, 1, all.Failed)
	require.Equal(t, 1, op.Attempts, "a refusal no retry changes is not retried")
	require.Equal(t, reason+": skip retry for the task", *op.LastError)
	require.Equal(t, contracts.BookingErrSlotNotAvailable, op.ErrorType)
	require.Equal(t, next, op.NextStep)
	require.NotEmpty(t, op.FailedAt)
	require.Equal(t, "Ben Family", op.ChildName)

	want := contracts.BookingCompletedEvent{Event: contracts.EventBookingFailed, OperationID: q.OperationID,
		OperationType: contracts.OpSetAppointment, PatientGUID: pat.PatientGUID, PatientName: "Fay Family",
		ChildName: "Ben Family", StartTime: late.StartTime, PhoneNumber: "412-555-0199", Attempts: 1,
		CompletedAt: op.FailedAt, FailedAt: op.FailedAt, ErrorType: contracts.BookingErrSlotNotAvailable,
		Reason: reason, NextStep: next}

	// On the Redis channel (other tests share the server: pick ours).
	deadline := time.Now().Add(10 * time.Second)
	var got contracts.BookingCompletedEvent
	for got.OperationID != q.OperationID {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		msg, err := sub.ReceiveMessage(ctx)
		cancel()
		require.NoError(t, err, "no booking_failed on %s", contracts.BookingEventsChannel)
		got = contracts.BookingCompletedEvent{}
		require.NoError(t, json.Unmarshal([]byte(msg.Payload), &got))
	}
	require.Equal(t, want, got)

	// The webhook: the same event, signed with OUTBOUND_HMAC_SECRET (never
	// HMAC_SECRET: the receiver could replay it at flowgate).
	post := hook.next(t)
	require.Equal(t, "/booking-events", post.path)
	ts := post.header.Get(hmacsig.HeaderTimestamp)
	sig, err := hex.DecodeString(post.header.Get(hmacsig.HeaderSignature))
	require.NoError(t, err)
	require.True(t, hmac.Equal(hmacsig.MAC([]byte(testSecrets["OUTBOUND_HMAC_SECRET"]), ts, post.body), sig), "bad signature")
	require.False(t, hmac.Equal(hmacsig.MAC([]byte(testSecrets["HMAC_SECRET"]), ts, post.body), sig), "signed with HMAC_SECRET")
	var hooked contracts.BookingCompletedEvent
	require.NoError(t, json.Unmarshal(post.body, &hooked))
	require.Equal(t, want, hooked)

	requireMetrics(t, p, map[string]float64{
		`flowgate_booking_failed_total{class="SLOT_NOT_AVAILABLE",operation="SetAppointment"}`: 1,
	})
	require.Zero(t, metricOf(t, p, `flowgate_booking_completed_total{operation="SetAppointment"}`))
	require.Len(t, sim.state().Appointments, 2, "only the two made aside")
	require.Equal(t, 5, sim.state().Calls["SetAppointment"])
}

// takeInSim books slot s in the simulator directly, as another Cloud9
// client would: flowgate offered it, and Cloud9 now refuses it.
func takeInSim(t *testing.T, sim *simProc, patientGUID string, s contracts.ApptSlot) {
	t.Helper()
	c9, err := cloud9.New(cloud9.Config{Endpoint: sim.URL, ClientID: "e2e-client", Username: "e2e-user", Password: "e2e-password",
		VendorUsername: "elsewhere"})
	require.NoError(t, err)
	defer c9.Close()
	_, _, err = c9.SetAppointment(context.Background(), cloud9.AppointmentInput{PatientGUID: patientGUID, StartTime: s.StartTime,
		ScheduleViewGUID: s.ScheduleViewGUID, ScheduleColumnGUID: s.ScheduleColumnGUID, AppointmentTypeGUID: s.AppointmentTypeGUID,
		Minutes: s.MinutesInt()})
	require.NoError(t, err)
}

// eventsHook is a BOOKING_EVENTS_WEBHOOK receiver.
type eventsHook struct {
	srv   *httptest.Server
	posts chan hookPost
}

type hookPost struct {
	path   string
	header http.Header
	body   []byte
}

func newEventsHook(t *testing.T) *eventsHook {
	h := &eventsHook{posts: make(chan hookPost, 16)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		select {
		case h.posts <- hookPost{path: r.URL.Path, header: r.Header.Clone(), body: body}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *eventsHook) next(t *testing.T) hookPost {
	t.Helper()
	select {
	case p := <-h.posts:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no POST to BOOKING_EVENTS_WEBHOOK")
		return hookPost{}
	}
}
