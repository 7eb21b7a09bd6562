package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/test/holdattack"
)

// TestHoldsSecurityReplayAcceptsNothing is issue 34's attack, in process
// over the real routes: victims hold, book and stream; an IVA reservation
// sits on the same type's channel; a spy subscribes to the stream (before
// and after) and reads the public /v1 routes (appointment types, the
// board's timeslots). Every value it saw — and, stronger than the threat,
// the victims' clientIds and the IVA session id as if they had leaked — is
// replayed against every route that acts on a hold, a stream or a booking:
// nothing is accepted, no victim's hold, stream, booking or reservation
// changes, and no event on the spy's stream, nor any public answer,
// carries a hold id, a stream token, an appointment id, a clientId or the
// session id. The victims' own credentials still work afterwards.
func TestHoldsSecurityReplayAcceptsNothing(t *testing.T) {
	env := realRedisEnv(t)
	typeID := "sec-" + randHex(t, 6) // event channels are per server, not per database
	env["HOLDS_SCHEDULE_FILE"] = securitySchedule(t, typeID)
	m, base := startMain(t, env)
	k := holdattack.New(base)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	day, free := freeSlots(t, k, typeID, 4)
	spy, err := k.Open(ctx, typeID, "spy-"+randHex(t, 4))
	require.NoError(t, err)
	t.Cleanup(spy.Close)
	// A watcher nobody harvests sees what the replay changes (the spies
	// may end their own streams: their tokens are values they saw).
	watch, err := k.Open(ctx, typeID, "watch-"+randHex(t, 8))
	require.NoError(t, err)
	t.Cleanup(watch.Close)

	// The victims: two web clients with their streams, holds and a booking.
	type victim struct {
		client string
		stream *holdattack.Stream
		holds  []holdshttpHold
	}
	victims := []*victim{{client: "victim-" + randHex(t, 8)}, {client: "victim-" + randHex(t, 8)}}
	for _, v := range victims {
		v.stream, err = k.Open(ctx, typeID, v.client)
		require.NoError(t, err)
		t.Cleanup(v.stream.Close)
	}
	secrets := map[string]string{} // secret → what it is
	for i, s := range free[:3] {
		v := victims[i/2]
		h := holdSlot(t, k, typeID, v.client, s)
		v.holds = append(v.holds, h)
		secrets[h.HoldID] = "holdId"
	}
	booked := victims[0].holds[1]
	a := k.Do(http.MethodPost, "/v1/appointment-types/"+typeID+"/book", map[string]string{"holdId": booked.HoldID, "clientId": victims[0].client})
	require.Equal(t, http.StatusCreated, a.Status, a.String())
	var bk struct {
		Appointment struct{ AppointmentID string }
	}
	require.NoError(t, json.Unmarshal(a.Body, &bk))
	secrets[bk.Appointment.AppointmentID] = "appointmentId"
	victims[0].holds = victims[0].holds[:1]

	// An IVA reservation (createAppt's face) on the same type's channel.
	eng, err := m.holdsEngine()
	require.NoError(t, err)
	ivaStart, err := time.Parse(time.RFC3339, free[3].start)
	require.NoError(t, err)
	session := "call-" + randHex(t, 8)
	iva, err := eng.Claim(ctx, holds.ClaimRequest{AppointmentTypeID: typeID, ClientID: session, SpecialistID: free[3].specialist,
		SlotStart: ivaStart, SlotEnd: ivaStart.Add(30 * time.Minute), Face: holds.FaceIVA, TTL: 10 * time.Minute, MaxHolds: -1, Cooldown: -1,
		FaceKey: "SlotReservation:loc:" + ivaStart.Format("20060102:1504") + ":" + free[3].specialist, FaceValue: `{"sessionId":"` + session + `"}`})
	require.NoError(t, err)
	secrets[iva.HoldID] = "IVA holdId"
	for _, v := range append(victims, &victim{stream: watch}) {
		secrets[v.stream.Token()] = "streamToken"
	}
	secretClients := map[string]string{session: "IVA session", victims[0].client: "clientId", victims[1].client: "clientId"}

	// The spy saw every hold, the confirm, the reservation; a second spy
	// reads them as a snapshot.
	for _, ref := range []string{victims[0].holds[0].HoldRef, booked.HoldRef, victims[1].holds[0].HoldRef, holds.Ref(iva.HoldID)} {
		_, err := spy.WaitFor(func(m map[string]any) bool { return m["type"] == "hold" && m["holdId"] == ref }, 10*time.Second)
		require.NoError(t, err)
	}
	_, err = spy.WaitFor(func(m map[string]any) bool { return m["type"] == "confirm" && m["holdId"] == booked.HoldRef }, 10*time.Second)
	require.NoError(t, err)
	spy2, err := k.Open(ctx, typeID, "spy2-"+randHex(t, 4))
	require.NoError(t, err)
	t.Cleanup(spy2.Close)
	views, err := k.PublicViews([]string{typeID}, day, 1)
	require.NoError(t, err)

	// Nothing shown carries a credential.
	shown := append(spy.Raw(), spy2.Raw()...)
	for _, v := range views {
		shown = append(shown, string(v))
	}
	for _, line := range shown {
		for s, what := range secrets {
			require.NotContains(t, line, s, "a %s is shown", what)
		}
		if strings.Contains(line, `"type":"init"`) {
			continue // a stream's own init names its own clientId and token
		}
		for s, what := range secretClients {
			require.NotContains(t, line, s, "a %s is shown", what)
		}
	}

	// Victims keep their holds alive during the replay.
	hbCtx, stopHB := context.WithCancel(ctx)
	var hb sync.WaitGroup
	hbFail := make(chan string, 16)
	for _, v := range victims {
		hb.Add(1)
		go func() {
			defer hb.Done()
			for {
				for _, h := range v.holds {
					if a := k.Do(http.MethodPatch, "/v1/holds", map[string]string{"holdId": h.HoldID, "clientId": v.client}); !holdattack.Kept(a) {
						hbFail <- a.String()
					}
				}
				select {
				case <-hbCtx.Done():
					return
				case <-time.After(5 * time.Second):
				}
			}
		}()
	}

	seen := map[string]bool{}
	for _, line := range shown {
		holdattack.Harvest(seen, line)
	}
	values := holdattack.Values(seen)
	clientIDs := []string{spy.ClientID}
	for _, v := range values {
		if holdattack.IDLike(v) && v != spy.ClientID {
			clientIDs = append(clientIDs, v)
		}
	}
	for c := range secretClients {
		clientIDs = append(clientIDs, c)
		values = append(values, c)
	}
	before := len(watch.Events())
	res := k.Replay(holdattack.Targets{TypeIDs: []string{typeID}, Values: values, ClientIDs: clientIDs,
		Held: holdattack.HeldSlots(spy2.Events())}, 8)
	stopHB()
	hb.Wait()
	close(hbFail)
	for f := range hbFail {
		t.Errorf("a victim's heartbeat failed during the replay: %s", f)
	}

	// Effects: nothing changed for the victims.
	var effects []string
	for _, e := range watch.Events()[before:] {
		if typ := e["type"]; typ != "ping" {
			effects = append(effects, fmt.Sprintf("the watcher saw %v %v", typ, e["holdId"]))
		}
	}
	for _, v := range victims {
		if r := v.stream.Ended(); r != "" {
			effects = append(effects, v.client+"'s stream ended: "+r)
		}
	}
	h, _, found, err := eng.HolderOf(ctx, free[3].specialist, ivaStart)
	require.NoError(t, err)
	if !found || h.HoldID != iva.HoldID {
		effects = append(effects, "the IVA reservation is gone")
	}
	accepted := len(res.Accepted) + len(effects)
	t.Logf("SECURITY holds replay: values=%d clientIds=%d attempts=%d accepted=%d by route %v", len(values), len(clientIDs), res.Attempts, accepted, res.ByRoute)
	require.Empty(t, res.Unexpected, "answers no refusal gives")
	require.Empty(t, res.Accepted, "accepted requests")
	require.Empty(t, effects, "effects on the victims")
	require.Positive(t, res.Attempts)

	// The owners' credentials still work.
	for _, v := range victims {
		for _, h := range v.holds {
			a := k.Do(http.MethodDelete, "/v1/holds/"+h.HoldID+"?clientId="+v.client, nil)
			require.Equal(t, http.StatusOK, a.Status, a.String())
			require.JSONEq(t, `{"released":true}`, string(a.Body))
		}
	}
	a = k.Do(http.MethodDelete, "/v1/appointments/"+bk.Appointment.AppointmentID, nil)
	require.Equal(t, http.StatusOK, a.Status, a.String())
	a = k.Do(http.MethodDelete, "/v1/holds/stream?clientId="+victims[1].client+"&streamToken="+victims[1].stream.Token(), nil)
	require.Equal(t, http.StatusNoContent, a.Status, a.String())
	_, err = victims[1].stream.WaitFor(func(m map[string]any) bool { return m["type"] == "end" && m["reason"] == "client-cancel" }, 10*time.Second)
	require.NoError(t, err)
}

type holdshttpHold struct {
	HoldID, HoldRef, SpecialistID, SlotStartDate string
}

type freeSlot struct{ specialist, start string }

// freeSlots finds the first day from tomorrow with n free (specialist,
// start) pairs of typeID.
func freeSlots(t *testing.T, k *holdattack.Kit, typeID string, n int) (string, []freeSlot) {
	t.Helper()
	for d := 1; d < 15; d++ {
		day := time.Now().AddDate(0, 0, d).Format(time.DateOnly)
		a := k.Do(http.MethodGet, "/v1/appointment-types/"+typeID+"/timeslots?from="+day+"&days=1", nil)
		require.Equal(t, http.StatusOK, a.Status, a.String())
		var ts struct {
			Slots []struct {
				Start string   `json:"slotStartDate"`
				Free  []string `json:"specialistIds"`
			} `json:"slots"`
		}
		require.NoError(t, json.Unmarshal(a.Body, &ts))
		var out []freeSlot
		for _, s := range ts.Slots {
			for _, sp := range s.Free {
				out = append(out, freeSlot{sp, s.Start})
			}
		}
		if len(out) >= n {
			return day, out[:n]
		}
	}
	t.Fatalf("no day with %d free slots", n)
	return "", nil
}

func holdSlot(t *testing.T, k *holdattack.Kit, typeID, client string, s freeSlot) holdshttpHold {
	t.Helper()
	a := k.Do(http.MethodPost, "/v1/holds", map[string]string{"appointmentTypeId": typeID, "clientId": client,
		"slotStartDate": s.start, "specialistId": s.specialist})
	require.Equal(t, http.StatusCreated, a.Status, a.String())
	var h holdshttpHold
	require.NoError(t, json.Unmarshal(a.Body, &h))
	require.Len(t, h.HoldID, 32, "128 bits, hex")
	require.Equal(t, holds.Ref(h.HoldID), h.HoldRef)
	return h
}

// securitySchedule is the sample schedule file with its first appointment
// type renamed typeID.
func securitySchedule(t *testing.T, typeID string) string {
	t.Helper()
	raw, err := os.ReadFile("../orchestrator/holds/availability/testdata/schedule.json")
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(raw, &s))
	types := s["appointmentTypes"].([]any)
	first := types[0].(map[string]any)
	first["id"] = typeID
	s["appointmentTypes"] = []any{first}
	raw, err = json.Marshal(s)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "schedule.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	return path
}

func randHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
