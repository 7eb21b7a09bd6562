//go:build chaos

package chaos

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

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/holdattack"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// secConc is how many replayed requests are in flight at once.
const secConc = 16

// secFakePatient is the patientGUID the spy sends to /book of a
// Cloud9-sourced type (well formed, nobody's): the hold is checked before
// Cloud9 is asked anything.
const secFakePatient = "00000000-0000-4000-8000-00000000d811"

// TestDrillSecurityHolds is issue 34's attack on the built binary, twice:
// with a schedule file (the web face: holds, local bookings, DELETE
// /v1/appointments) and on the Cloud9 simulator (web holds of a Cloud9
// type booked in Cloud9, and createAppt's reservation — the IVA face — on
// the same channel). Victims hold, book and keep their streams open; a spy
// subscribes to the stream before and after them and reads the public /v1
// routes (appointment types, the board's timeslots). Every value it saw,
// plus the victims' clientIds and the IVA session id as if they had leaked,
// is replayed against every route that acts on a hold, a stream or a
// booking (PATCH/DELETE /v1/holds, POST /v1/holds on the held slots,
// /book, DELETE /v1/holds/stream, DELETE /v1/appointments/{id}). Nothing
// may be accepted: no answer that says it acted, no event on a watcher's
// stream (nobody harvests it), no victim's stream ended, no victim's
// heartbeat refused; no shown value may be a credential. The victims' own
// credentials work afterwards.
func TestDrillSecurityHolds(t *testing.T) {
	var phases []secResult
	t.Run("web face, schedule file", func(t *testing.T) { phases = append(phases, secWebFace(t)) })
	t.Run("Cloud9 source and the IVA face", func(t *testing.T) { phases = append(phases, secCloud9Face(t)) })
	attempts, accepted, shown := 0, 0, 0
	var parts []string
	for _, p := range phases {
		attempts += p.attempts
		accepted += p.accepted
		shown += p.values
		parts = append(parts, fmt.Sprintf("%s: values %d, clientIds %d, attempts %d, accepted %d, leaks %d, unexpected %d, by route %v",
			p.name, p.values, p.clients, p.attempts, p.accepted, p.leaks, p.unexpected, p.byRoute))
	}
	summary(t, "security holds", "attempts=%d accepted=%d | values replayed %d | %s", attempts, accepted, shown, strings.Join(parts, " | "))
	if accepted > 0 {
		t.Errorf("%d of %d replayed requests were accepted", accepted, attempts)
	}
	if len(phases) != 2 {
		t.Errorf("%d of 2 phases ran", len(phases))
	}
}

// secResult is one phase's counts.
type secResult struct {
	name                                                   string
	values, clients, attempts, accepted, leaks, unexpected int
	byRoute                                                map[string]int
}

// secVictim is a web client with its stream and live holds.
type secVictim struct {
	client string
	stream *holdattack.Stream
	holds  []secHold
}

type secHold struct {
	HoldID, HoldRef, SpecialistID, SlotStartDate string
}

// secScene is what a phase's victims did: the spy's and the watcher's
// streams, the secrets nobody but their owner may see, the refs the spy
// must have seen.
type secScene struct {
	k              *holdattack.Kit
	typeID, day    string
	spy, watch     *holdattack.Stream
	victims        []*secVictim
	secrets        map[string]string // value → what it is (never shown to anyone else)
	secretClients  map[string]string // clientIds / session ids (shown only in their own stream's init)
	seenRefs       []string          // hold events the spy must have seen
	confirmedRefs  []string          // confirm events the spy must have seen
	patientGUID    string            // for /book of a Cloud9-sourced type
	afterOwnersUse func(t *testing.T)
}

func secRand(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// open opens a stream or fails the drill.
func (sc *secScene) open(ctx context.Context, t *testing.T, client string) *holdattack.Stream {
	t.Helper()
	s, err := sc.k.Open(ctx, sc.typeID, client)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// hold makes victim v hold (specialist, start).
func (sc *secScene) hold(t *testing.T, v *secVictim, specialist, start string) secHold {
	t.Helper()
	a := sc.k.Do(http.MethodPost, "/v1/holds", map[string]string{"appointmentTypeId": sc.typeID, "clientId": v.client,
		"slotStartDate": start, "specialistId": specialist})
	var h secHold
	if a.Status != http.StatusCreated || json.Unmarshal(a.Body, &h) != nil || len(h.HoldID) != 32 || !strings.HasPrefix(h.HoldRef, "ref-") {
		t.Fatalf("victim hold: %s", a)
	}
	sc.secrets[h.HoldID] = "holdId"
	sc.seenRefs = append(sc.seenRefs, h.HoldRef)
	v.holds = append(v.holds, h)
	return h
}

// freePairs is the first day from tomorrow with n free (specialist, start)
// pairs of the scene's type.
func (sc *secScene) freePairs(t *testing.T, n int) [][2]string {
	t.Helper()
	for d := 1; d < 30; d++ {
		day := time.Now().AddDate(0, 0, d).Format(time.DateOnly)
		a := sc.k.Do(http.MethodGet, "/v1/appointment-types/"+sc.typeID+"/timeslots?from="+day+"&days=1", nil)
		var ts struct {
			Slots []struct {
				Start string   `json:"slotStartDate"`
				Free  []string `json:"specialistIds"`
			} `json:"slots"`
		}
		if a.Status != http.StatusOK || json.Unmarshal(a.Body, &ts) != nil {
			t.Fatalf("timeslots: %s", a)
		}
		var out [][2]string
		for _, s := range ts.Slots {
			for _, sp := range s.Free {
				out = append(out, [2]string{sp, s.Start})
			}
		}
		if len(out) >= n {
			sc.day = day
			return out[:n]
		}
	}
	t.Fatalf("no day with %d free slots", n)
	return nil
}

// secWebFace: the schedule file's web face.
func secWebFace(t *testing.T) secResult {
	srv := rediscluster.StartServer(t)
	typeID := "sec-" + secRand(t, 6)
	p := startFlowgate(t, flowgateEnv(srv.URL(), map[string]string{"HOLDS_SCHEDULE_FILE": secSchedule(t, typeID)}))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sc := &secScene{k: holdattack.New(p.Base), typeID: typeID, secrets: map[string]string{}, secretClients: map[string]string{}}
	free := sc.freePairs(t, 3)
	sc.spy = sc.open(ctx, t, "spy-"+secRand(t, 4))
	sc.watch = sc.open(ctx, t, "watch-"+secRand(t, 8))
	for range 2 {
		v := &secVictim{client: "victim-" + secRand(t, 8)}
		v.stream = sc.open(ctx, t, v.client)
		sc.victims = append(sc.victims, v)
		sc.secretClients[v.client] = "clientId"
	}
	v0, v1 := sc.victims[0], sc.victims[1]
	sc.hold(t, v0, free[0][0], free[0][1])
	booked := sc.hold(t, v0, free[1][0], free[1][1])
	sc.hold(t, v1, free[2][0], free[2][1])
	a := sc.k.Do(http.MethodPost, "/v1/appointment-types/"+typeID+"/book", map[string]string{"holdId": booked.HoldID, "clientId": v0.client})
	var bk struct {
		Appointment struct{ AppointmentID string }
	}
	if a.Status != http.StatusCreated || json.Unmarshal(a.Body, &bk) != nil || bk.Appointment.AppointmentID == "" {
		t.Fatalf("victim book: %s", a)
	}
	sc.secrets[bk.Appointment.AppointmentID] = "appointmentId"
	sc.confirmedRefs = append(sc.confirmedRefs, booked.HoldRef)
	v0.holds = v0.holds[:1]
	sc.afterOwnersUse = func(t *testing.T) {
		if a := sc.k.Do(http.MethodDelete, "/v1/appointments/"+bk.Appointment.AppointmentID, nil); a.Status != http.StatusOK {
			t.Errorf("the victim's own cancel: %s", a)
		}
	}
	return sc.attack(ctx, t, "web face")
}

// secCloud9Face: the Cloud9 simulator's types, createAppt's reservation
// and a web booking made in Cloud9.
func secCloud9Face(t *testing.T) secResult {
	srv := rediscluster.StartServer(t)
	p := startFlowgate(t, flowgateEnv(srv.URL(), nil))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := newClient(p.Base, 60*time.Second, nil)
	session := "call-" + secRand(t, 8)
	var patient contracts.PatientCreatedResponse
	mustBooking(t, c, "createPatient", map[string]any{"patientFirstName": "Vic", "patientLastName": "Tim",
		"phoneNumber": "4125550177", "birthDate": "05/06/1984", "uui": session}, &patient)
	var slots contracts.GetApptSlotsResponse
	mustBooking(t, c, "getApptSlots", map[string]any{"uui": session, "sessionId": session}, &slots)
	if !patient.Success || len(slots.Slots) < 2 || slots.Slots[0].AppointmentTypeGUID == "" {
		t.Fatalf("setup: patient %+v, %d slots", patient, len(slots.Slots))
	}
	sc := &secScene{k: holdattack.New(p.Base), typeID: slots.Slots[0].AppointmentTypeGUID, secrets: map[string]string{},
		secretClients: map[string]string{session: "IVA session"}, patientGUID: secFakePatient}
	sc.secrets[patient.BookingAuthToken] = "bookingAuthToken"
	sc.spy = sc.open(ctx, t, "spy-"+secRand(t, 4))
	sc.watch = sc.open(ctx, t, "watch-"+secRand(t, 8))
	v := &secVictim{client: "victim-" + secRand(t, 8)}
	v.stream = sc.open(ctx, t, v.client)
	sc.victims = []*secVictim{v}
	sc.secretClients[v.client] = "clientId"

	// The web victim holds two slots and books one in Cloud9.
	free := sc.freePairs(t, 2)
	sc.hold(t, v, free[0][0], free[0][1])
	booked := sc.hold(t, v, free[1][0], free[1][1])
	a := sc.k.Do(http.MethodPost, "/v1/appointment-types/"+sc.typeID+"/book",
		map[string]string{"holdId": booked.HoldID, "clientId": v.client, "patientGUID": patient.PatientGUID})
	var bk struct {
		Appointment struct{ AppointmentID, Cloud9AppointmentGUID string }
	}
	if (a.Status != http.StatusCreated && a.Status != http.StatusAccepted) || json.Unmarshal(a.Body, &bk) != nil {
		t.Fatalf("victim web book in Cloud9: %s", a)
	}
	sc.secrets[bk.Appointment.AppointmentID] = "appointmentId"
	v.holds = v.holds[:1]

	// The caller on the phone books through createAppt: its reservation
	// is published on the same type's channel (and kept after the booking).
	getAgain := contracts.GetApptSlotsResponse{}
	mustBooking(t, c, "getApptSlots", map[string]any{"uui": session, "sessionId": session}, &getAgain)
	var slot *contracts.ApptSlot
	for i := range getAgain.Slots {
		if getAgain.Slots[i].AppointmentTypeGUID == sc.typeID {
			slot = &getAgain.Slots[i]
			break
		}
	}
	if slot == nil {
		t.Fatal("no slot of the type left for createAppt")
	}
	var appt contracts.ApptBookedResponse
	mustBooking(t, c, "createAppt", map[string]any{"patientGUID": patient.PatientGUID, "bookingToken": slot.BookingToken,
		"childName": "Tom", "note": "Child: Tom | DOB: 01/15/2015", "uui": session, "sessionId": session,
		"bookingAuthToken": patient.BookingAuthToken}, &appt)
	if !appt.Success {
		t.Fatalf("createAppt did not book: %+v", appt)
	}
	if _, err := sc.spy.WaitFor(func(m map[string]any) bool {
		return m["type"] == "confirm" && m["face"] == "iva" && strings.EqualFold(fmt.Sprint(m["specialistId"]), slot.ScheduleColumnGUID)
	}, 20*time.Second); err != nil {
		t.Fatalf("the IVA reservation's confirm on the stream: %v", err)
	}
	return sc.attack(ctx, t, "Cloud9 + IVA")
}

// attack is the common part: wait until the spy saw everything, read the
// public views, check nothing shown is a credential, replay, check the
// effects, and let the owners use their credentials.
func (sc *secScene) attack(ctx context.Context, t *testing.T, name string) secResult {
	t.Helper()
	res := secResult{name: name}
	for _, ref := range sc.seenRefs {
		if _, err := sc.spy.WaitFor(func(m map[string]any) bool { return m["type"] == "hold" && m["holdId"] == ref }, 10*time.Second); err != nil {
			t.Fatalf("spy: %v", err)
		}
	}
	for _, ref := range sc.confirmedRefs {
		if _, err := sc.spy.WaitFor(func(m map[string]any) bool { return m["type"] == "confirm" && m["holdId"] == ref }, 10*time.Second); err != nil {
			t.Fatalf("spy: %v", err)
		}
	}
	spy2 := sc.open(ctx, t, "spy2-"+secRand(t, 4))
	views, err := sc.k.PublicViews([]string{sc.typeID}, sc.day, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range append(sc.victims, &secVictim{stream: sc.watch}) {
		sc.secrets[v.stream.Token()] = "streamToken"
	}
	shown := append(sc.spy.Raw(), spy2.Raw()...)
	for _, v := range views {
		shown = append(shown, string(v))
	}
	for _, line := range shown {
		for s, what := range sc.secrets {
			if s != "" && strings.Contains(line, s) {
				res.leaks++
				t.Errorf("a %s is shown: %s", what, line)
			}
		}
		if strings.Contains(line, `"type":"init"`) {
			continue // a stream's own init names its own clientId
		}
		for s, what := range sc.secretClients {
			if strings.Contains(line, s) {
				res.leaks++
				t.Errorf("a %s is shown: %s", what, line)
			}
		}
	}

	// The victims keep their holds alive meanwhile.
	hbCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var hbFailed []string
	for _, v := range sc.victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				for _, h := range v.holds {
					if a := sc.k.Do(http.MethodPatch, "/v1/holds", map[string]string{"holdId": h.HoldID, "clientId": v.client}); !holdattack.Kept(a) {
						mu.Lock()
						hbFailed = append(hbFailed, a.String())
						mu.Unlock()
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
	clients := []string{sc.spy.ClientID}
	for _, v := range values {
		if holdattack.IDLike(v) && v != sc.spy.ClientID {
			clients = append(clients, v)
		}
	}
	for c := range sc.secretClients { // stronger than the threat: as if they had leaked
		clients = append(clients, c)
		values = append(values, c)
	}
	before := len(sc.watch.Events())
	began := time.Now()
	r := sc.k.Replay(holdattack.Targets{TypeIDs: []string{sc.typeID}, Values: values, ClientIDs: clients,
		Held: holdattack.HeldSlots(spy2.Events()), PatientGUID: sc.patientGUID}, secConc)
	took := time.Since(began)
	stop()
	wg.Wait()

	var effects []string
	for _, e := range sc.watch.Events()[before:] {
		if typ := e["type"]; typ != "ping" {
			effects = append(effects, fmt.Sprintf("the watcher saw %v %v", typ, e["holdId"]))
		}
	}
	for _, v := range sc.victims {
		if reason := v.stream.Ended(); reason != "" {
			effects = append(effects, v.client+"'s stream ended: "+reason)
		}
	}
	effects = append(effects, hbFailed...)
	for _, a := range r.Accepted {
		t.Errorf("accepted: %s", a)
	}
	for _, e := range effects {
		t.Errorf("effect on a victim: %s", e)
	}
	for i, u := range r.Unexpected {
		if i < 10 {
			t.Errorf("an answer no refusal gives: %s", u)
		}
	}
	res.values, res.clients, res.attempts = len(values), len(clients), r.Attempts
	res.accepted, res.unexpected, res.byRoute = len(r.Accepted)+len(effects), len(r.Unexpected), r.ByRoute
	t.Logf("%s: %d values × %d clientIds → %d attempts in %s, accepted %d", name, len(values), len(clients), r.Attempts,
		took.Round(time.Millisecond), res.accepted)

	// The owners' credentials still work.
	for _, v := range sc.victims {
		for _, h := range v.holds {
			a := sc.k.Do(http.MethodDelete, "/v1/holds/"+h.HoldID+"?clientId="+v.client, nil)
			if a.Status != http.StatusOK || !strings.Contains(string(a.Body), `"released":true`) {
				t.Errorf("the victim's own release: %s", a)
			}
		}
		a := sc.k.Do(http.MethodDelete, "/v1/holds/stream?clientId="+v.client+"&streamToken="+v.stream.Token(), nil)
		if a.Status != http.StatusNoContent {
			t.Errorf("the victim's own stream cancel: %s", a)
		} else if _, err := v.stream.WaitFor(func(m map[string]any) bool { return m["type"] == "end" && m["reason"] == "client-cancel" }, 10*time.Second); err != nil {
			t.Errorf("the victim's own stream cancel: %v", err)
		}
	}
	if sc.afterOwnersUse != nil {
		sc.afterOwnersUse(t)
	}
	return res
}

// secSchedule is the sample schedule file with its first appointment type
// renamed typeID (event channels are per server: a type of its own).
func secSchedule(t *testing.T, typeID string) string {
	t.Helper()
	raw, err := os.ReadFile("../../orchestrator/holds/availability/testdata/schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	first := s["appointmentTypes"].([]any)[0].(map[string]any)
	first["id"] = typeID
	s["appointmentTypes"] = []any{first}
	if raw, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "schedule.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
