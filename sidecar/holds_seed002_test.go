package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/holdattack"
)

// TestHoldsAnswerAsSeed002 is issue 35's point 7 over the real wiring
// (schedule file, engine, /v1 routes, stream hub on one Redis):
//
//  1. a heartbeat of a hold whose TTL ran out answers 200
//     {"ok":false} (docs/holds.md#the-web-face-v1holds), not 404;
//  2. a stream asking for a lease above HOLDS_STREAM_LEASE_MAX (1 h) opens
//     with the maximum — the init event's leaseMs says so — where it was 400;
//  3. cancelling a /v1 booking announces "release" with the hold's public
//     ref and its real times — the slot's start and end, holdExpiresAt as
//     the booking's confirm event showed it — where holdId was "" and the
//     times zero.
func TestHoldsAnswerAsSeed002(t *testing.T) {
	env := realRedisEnv(t)
	typeID := "seed2-" + randHex(t, 6) // event channels are per server, not per database
	env["HOLDS_SCHEDULE_FILE"] = securitySchedule(t, typeID)
	env["HOLD_TTL"] = "1s"
	_, base := startMain(t, env)
	k := holdattack.New(base)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, free := freeSlots(t, k, typeID, 2)

	// (2) The lease: two hours asked, one hour given.
	board, err := k.OpenLease(ctx, typeID, "board-"+randHex(t, 8), "7200000")
	require.NoError(t, err, "a leaseMs above the maximum opens the stream")
	t.Cleanup(board.Close)
	require.EqualValues(t, time.Hour.Milliseconds(), board.Init()["leaseMs"], "clamped to HOLDS_STREAM_LEASE_MAX")

	// (1) A heartbeat after the hold's TTL ran out.
	client := "web-" + randHex(t, 8)
	h := holdSlot(t, k, typeID, client, free[0])
	beat := func() (int, map[string]any) {
		a := k.Do(http.MethodPatch, "/v1/holds", map[string]string{"holdId": h.HoldID, "clientId": client})
		var m map[string]any
		require.NoError(t, json.Unmarshal(a.Body, &m), a.String())
		return a.Status, m
	}
	status, body := beat()
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, true, body["ok"], "a live hold is kept")
	time.Sleep(1500 * time.Millisecond) // HOLD_TTL 1s
	status, body = beat()
	require.Equal(t, http.StatusOK, status, "a lost hold's heartbeat is answered (docs/holds.md), not refused")
	require.Equal(t, map[string]any{"ok": false}, body)
	_, err = board.WaitFor(func(m map[string]any) bool { return m["type"] == "release" && m["holdId"] == h.HoldRef }, 10*time.Second)
	require.NoError(t, err, "the expiry is announced")

	// (3) Book, then cancel: the release names the hold and its times.
	b := holdSlot(t, k, typeID, client, free[1])
	a := k.Do(http.MethodPost, "/v1/appointment-types/"+typeID+"/book", map[string]string{"holdId": b.HoldID, "clientId": client})
	require.Equal(t, http.StatusCreated, a.Status, a.String())
	var bk struct {
		Appointment struct{ AppointmentID, SlotStartDate, SlotEndDate string }
	}
	require.NoError(t, json.Unmarshal(a.Body, &bk))
	confirm, err := board.WaitFor(func(m map[string]any) bool { return m["type"] == "confirm" && m["holdId"] == b.HoldRef }, 10*time.Second)
	require.NoError(t, err)
	a = k.Do(http.MethodDelete, "/v1/appointments/"+bk.Appointment.AppointmentID, nil)
	require.Equal(t, http.StatusOK, a.Status, a.String())
	release, err := board.WaitFor(func(m map[string]any) bool { // the only release but the expired hold's
		return m["type"] == "release" && m["holdId"] != h.HoldRef
	}, 10*time.Second)
	require.NoError(t, err, "the cancel frees the slot on the stream")
	require.Equal(t, b.HoldRef, release["holdId"], "the hold's public ref, not an empty id")
	start, err := time.Parse(time.RFC3339, free[1].start)
	require.NoError(t, err)
	for field, want := range map[string]time.Time{"slotStartDate": start, "slotEndDate": start.Add(30 * time.Minute)} {
		got, err := time.Parse(time.RFC3339, release[field].(string))
		require.NoError(t, err, field)
		require.True(t, want.Equal(got), "%s %s, want %s", field, got, want)
	}
	require.Equal(t, confirm["holdExpiresAt"], release["holdExpiresAt"], "the booked hold's expiry, as its confirm showed it")
	exp, err := time.Parse(time.RFC3339, release["holdExpiresAt"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), exp, time.Minute, "a real time, not the zero time")
	require.Equal(t, false, release["isOwnHold"])
	require.NotContains(t, release, "clientId")
}
