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
// session id. The victims' own credentials still work afterwards. The
// steps run in order on one fixture.
func TestHoldsSecurityReplayAcceptsNothing(t *testing.T) {
	r := startHoldsAttack(t)
	r.victimsHoldAndBook(t)
	r.ivaReservation(t)
	r.spySeesNoCredential(t)
	r.replayChangesNothing(t)
	r.ownersStillWork(t)
}

// holdsVictim is a web client with its stream and its live holds.
type holdsVictim struct {
	client string
	stream *holdattack.Stream
	holds  []holdshttpHold
}

// holdsAttack is TestHoldsSecurityReplayAcceptsNothing's fixture: the
// sidecar on a real Redis with one appointment type, a spy and a watcher on
// its stream, and what the steps add (victims, secrets, what was shown).
type holdsAttack struct {
	m      *Main
	k      *holdattack.Kit
	ctx    context.Context
	typeID string
	day    string
	free   []freeSlot
	spy    *holdattack.Stream
	// watch is a watcher nobody harvests: it sees what the replay changes
	// (the spies may end their own streams: their tokens are values they saw).
	watch *holdattack.Stream

	victims       []*holdsVictim
	appointmentID string            // victims[0]'s booking
	secrets       map[string]string // secret → what it is
	eng           *holds.Engine
	iva           holds.Hold // the IVA reservation on free[3]
	ivaStart      time.Time
	secretClients map[string]string // clientId or session → what it is
	spy2          *holdattack.Stream
	shown         []string // every stream line and public answer the spies saw
}

func startHoldsAttack(t *testing.T) *holdsAttack {
	t.Helper()
	env := realRedisEnv(t)
	r := &holdsAttack{typeID: "sec-" + randHex(t, 6)} // event channels are per server, not per database
	env["HOLDS_SCHEDULE_FILE"] = securitySchedule(t, r.typeID)
	var base string
	r.m, base = startMain(t, env)
	r.k = holdattack.New(base)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r.ctx = ctx

	r.day, r.free = freeSlots(t, r.k, r.typeID, 4)
	var err error
	r.spy, err = r.k.Open(ctx, r.typeID, "spy-"+randHex(t, 4))
	require.NoError(t, err)
	t.Cleanup(r.spy.Close)
	r.watch, err = r.k.Open(ctx, r.typeID, "watch-"+randHex(t, 8))
	require.NoError(t, err)
	t.Cleanup(r.watch.Close)
	return r
}

// victimsHoldAndBook: two web clients with their streams, holds and a
// booking.
func (r *holdsAttack) victimsHoldAndBook(t *testing.T) {
	k, typeID := r.k, r.typeID
	var err error
	victims := []*holdsVictim{{client: "victim-" + randHex(t, 8)}, {client: "victim-" + randHex(t, 8)}}
	for _, v := range victims {
		v.stream, err = k.Open(r.ctx, typeID, v.client)
		require.NoError(t, err)
		t.Cleanup(v.stream.Close)
	}
	secrets := map[string]string{}
	for i, s := range r.free[:3] {
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
	r.victims, r.secrets, r.appointmentID = victims, secrets, bk.Appointment.AppointmentID

	// The spy saw every hold and the confirm.
	for _, ref := range []string{victims[0].holds[0].HoldRef, booked.HoldRef, victims[1].holds[0].HoldRef} {
		_, err := r.spy.WaitFor(func(m map[string]any) bool { return m["type"] == "hold" && m["holdId"] == ref }, 10*time.Second)
		require.NoError(t, err)
	}
	_, err = r.spy.WaitFor(func(m map[string]any) bool { return m["type"] == "confirm" && m["holdId"] == booked.HoldRef }, 10*time.Second)
	require.NoError(t, err)
}

// ivaReservation: an IVA reservation (createAppt's face) on the same type's
// channel; the spy sees it.
func (r *holdsAttack) ivaReservation(t *testing.T) {
	var err error
	r.eng, err = r.m.holdsEngine()
	require.NoError(t, err)
	r.ivaStart, err = time.Parse(time.RFC3339, r.free[3].start)
	require.NoError(t, err)
	ivaStart, specialist := r.ivaStart, r.free[3].specialist
	session := "call-" + randHex(t, 8)
	r.iva, err = r.eng.Claim(r.ctx, holds.ClaimRequest{AppointmentTypeID: r.typeID, ClientID: session, SpecialistID: specialist,
		SlotStart: ivaStart, SlotEnd: ivaStart.Add(30 * time.Minute), Face: holds.FaceIVA, TTL: 10 * time.Minute, MaxHolds: -1, Cooldown: -1,
		FaceKey: "SlotReservation:loc:" + ivaStart.Format("20060102:1504") + ":" + specialist, FaceValue: `{"sessionId":"` + session + `"}`})
	require.NoError(t, err)
	r.secrets[r.iva.HoldID] = "IVA holdId"
	for _, v := range append(r.victims, &holdsVictim{stream: r.watch}) {
		r.secrets[v.stream.Token()] = "streamToken"
	}
	r.secretClients = map[string]string{session: "IVA session", r.victims[0].client: "clientId", r.victims[1].client: "clientId"}
	ref := holds.Ref(r.iva.HoldID)
	_, err = r.spy.WaitFor(func(m map[string]any) bool { return m["type"] == "hold" && m["holdId"] == ref }, 10*time.Second)
	require.NoError(t, err)
}

// spySeesNoCredential: a second spy reads every hold as a snapshot; nothing
// the spies were shown, nor any public answer, carries a credential.
func (r *holdsAttack) spySeesNoCredential(t *testing.T) {
	var err error
	r.spy2, err = r.k.Open(r.ctx, r.typeID, "spy2-"+randHex(t, 4))
	require.NoError(t, err)
	t.Cleanup(r.spy2.Close)
	views, err := r.k.PublicViews([]string{r.typeID}, r.day, 1)
	require.NoError(t, err)

	shown := append(r.spy.Raw(), r.spy2.Raw()...)
	for _, v := range views {
		shown = append(shown, string(v))
	}
	for _, line := range shown {
		for s, what := range r.secrets {
			require.NotContains(t, line, s, "a %s is shown", what)
		}
		if strings.Contains(line, `"type":"init"`) {
			continue // a stream's own init names its own clientId and token
		}
		for s, what := range r.secretClients {
			require.NotContains(t, line, s, "a %s is shown", what)
		}
	}
	r.shown = shown
}

// replayChangesNothing: every value the spies saw, and the leaked clientIds
// and session, replayed against every route while the victims keep their
// holds alive: nothing is accepted and nothing changes for the victims.
func (r *holdsAttack) replayChangesNothing(t *testing.T) {
	k, spy := r.k, r.spy
	stopHB := r.heartbeatVictims()
	seen := map[string]bool{}
	for _, line := range r.shown {
		holdattack.Harvest(seen, line)
	}
	values := holdattack.Values(seen)
	clientIDs := []string{spy.ClientID}
	for _, v := range values {
		if holdattack.IDLike(v) && v != spy.ClientID {
			clientIDs = append(clientIDs, v)
		}
	}
	for c := range r.secretClients {
		clientIDs = append(clientIDs, c)
		values = append(values, c)
	}
	before := len(r.watch.Events())
	res := k.Replay(holdattack.Targets{TypeIDs: []string{r.typeID}, Values: values, ClientIDs: clientIDs,
		Held: holdattack.HeldSlots(r.spy2.Events())}, 8)
	for _, f := range stopHB() {
		t.Errorf("a victim's heartbeat failed during the replay: %s", f)
	}

	effects := r.effectsSince(t, before)
	accepted := len(res.Accepted) + len(effects)
	t.Logf("SECURITY holds replay: values=%d clientIds=%d attempts=%d accepted=%d by route %v", len(values), len(clientIDs), res.Attempts, accepted, res.ByRoute)
	require.Empty(t, res.Unexpected, "answers no refusal gives")
	require.Empty(t, res.Accepted, "accepted requests")
	require.Empty(t, effects, "effects on the victims")
	require.Positive(t, res.Attempts)
}

// heartbeatVictims keeps the victims' holds alive every 5 s until the
// returned stop is called; stop returns the heartbeats that failed.
func (r *holdsAttack) heartbeatVictims() (stop func() []string) {
	hbCtx, stopHB := context.WithCancel(r.ctx)
	var hb sync.WaitGroup
	hbFail := make(chan string, 16)
	for _, v := range r.victims {
		hb.Add(1)
		go func() {
			defer hb.Done()
			for {
				for _, h := range v.holds {
					if a := r.k.Do(http.MethodPatch, "/v1/holds", map[string]string{"holdId": h.HoldID, "clientId": v.client}); !holdattack.Kept(a) {
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
	return func() []string {
		stopHB()
		hb.Wait()
		close(hbFail)
		var failed []string
		for f := range hbFail {
			failed = append(failed, f)
		}
		return failed
	}
}

// effectsSince lists what changed for the victims since the watcher's
// event number before: events, ended streams, a lost IVA reservation.
func (r *holdsAttack) effectsSince(t *testing.T, before int) []string {
	t.Helper()
	var effects []string
	for _, e := range r.watch.Events()[before:] {
		if typ := e["type"]; typ != "ping" {
			effects = append(effects, fmt.Sprintf("the watcher saw %v %v", typ, e["holdId"]))
		}
	}
	for _, v := range r.victims {
		if why := v.stream.Ended(); why != "" {
			effects = append(effects, v.client+"'s stream ended: "+why)
		}
	}
	h, _, found, err := r.eng.HolderOf(r.ctx, r.free[3].specialist, r.ivaStart)
	require.NoError(t, err)
	if !found || h.HoldID != r.iva.HoldID {
		effects = append(effects, "the IVA reservation is gone")
	}
	return effects
}

// ownersStillWork: the owners' credentials still release, cancel and end.
func (r *holdsAttack) ownersStillWork(t *testing.T) {
	k, victims := r.k, r.victims
	for _, v := range victims {
		for _, h := range v.holds {
			a := k.Do(http.MethodDelete, "/v1/holds/"+h.HoldID+"?clientId="+v.client, nil)
			require.Equal(t, http.StatusOK, a.Status, a.String())
			require.JSONEq(t, `{"released":true}`, string(a.Body))
		}
	}
	a := k.Do(http.MethodDelete, "/v1/appointments/"+r.appointmentID, nil)
	require.Equal(t, http.StatusOK, a.Status, a.String())
	a = k.Do(http.MethodDelete, "/v1/holds/stream?clientId="+victims[1].client+"&streamToken="+victims[1].stream.Token(), nil)
	require.Equal(t, http.StatusNoContent, a.Status, a.String())
	_, err := victims[1].stream.WaitFor(func(m map[string]any) bool { return m["type"] == "end" && m["reason"] == "client-cancel" }, 10*time.Second)
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
