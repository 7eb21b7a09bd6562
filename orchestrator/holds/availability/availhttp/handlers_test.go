package availhttp

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/basicauth"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/holds/availability"
	"github.com/flowgate/flowgate/orchestrator/web"
	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/redistest"
)

var (
	bg    = context.Background()
	quiet = slog.New(slog.DiscardHandler)
)

// monday0800 is Monday 2026-11-23 08:00 CST: "now" of the tests.
var monday0800 = time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)

// fakeHolds is an in-memory ActiveHolds (the engine's Active until it is
// merged).
type fakeHolds struct {
	mu    sync.Mutex
	holds []Hold
	err   error
}

func (f *fakeHolds) Active(_ context.Context, typeID string) ([]Hold, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	var out []Hold
	for _, h := range f.holds {
		if h.AppointmentTypeID == typeID {
			out = append(out, h)
		}
	}
	return out, nil
}

type env struct {
	app    *fiber.App
	rdb    *redis.Client
	prefix string
	holds  *fakeHolds
	cat    *availability.Catalog
}

var seq atomic.Int64

func setup(t *testing.T, rdb *redis.Client) *env {
	t.Helper()
	e := &env{rdb: rdb, holds: &fakeHolds{}}
	e.prefix = strings.ReplaceAll(t.Name(), "/", "_") + time.Duration(seq.Add(1)).String() + ":"
	clock := clocktest.New(monday0800)
	store, err := availability.NewStore(rdb, availability.StoreConfig{KeyPrefix: e.prefix, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	sched, hash, err := availability.LoadScheduleFile(filepath.Join("..", "testdata", "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.SeedSchedule(bg, sched, hash); err != nil {
		t.Fatal(err)
	}
	cat, err := availability.NewCatalog(availability.CatalogConfig{Source: availability.ScheduleSource{Store: store}, Store: store, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.app, e.cat = newApp(t, cat, e.holds), cat
	return e
}

func newApp(t *testing.T, cat *availability.Catalog, holds ActiveHolds) *fiber.App {
	t.Helper()
	app, err := web.New(web.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	admin := basicauth.New(basicauth.Config{Authorizer: func(u, p string) bool {
		return subtle.ConstantTimeCompare([]byte(u+":"+p), []byte("ops:secret")) == 1
	}})
	h, err := New(Config{Catalog: cat, Holds: holds, Admin: admin, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	Register(app, h)
	return app
}

// do sends a request; admin requests carry the credentials.
func (e *env) do(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	return doApp(t, e.app, method, path, body, strings.HasPrefix(path, "/v1/admin/"))
}

func doApp(t *testing.T, app *fiber.App, method, path, body string, auth bool) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		req.SetBasicAuth("ops", "secret")
	}
	resp, err := app.Test(req, 10000)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (e *env) timeslots(t *testing.T, query string) TimeslotsResponse {
	t.Helper()
	code, body := e.do(t, "GET", "/v1/appointment-types/consultation/timeslots?"+query, "")
	if code != 200 {
		t.Fatalf("GET timeslots?%s: %d %s", query, code, body)
	}
	var r TimeslotsResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// dump is every key under the env's prefix with its DUMP.
func (e *env) dump(t *testing.T) map[string]string {
	t.Helper()
	ks, err := e.rdb.Keys(bg, e.prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range ks {
		out[k] = e.rdb.Dump(bg, k).Val()
	}
	return out
}

func at(s string) time.Time { return time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC).Add(mustDur(s)) }

func mustDur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestAppointmentTypes(t *testing.T) {
	e := setup(t, redistest.New(t).Client)
	code, body := e.do(t, "GET", "/v1/appointment-types", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	contractstest.Golden(t, "availability_appointment_types", body)
}

func TestTimeslotsFilterHolds(t *testing.T) {
	e := setup(t, redistest.New(t).Client)
	e.holds.holds = []Hold{
		{HoldID: "h1", ClientID: "other", AppointmentTypeID: "consultation", SpecialistID: "dr-adams", SlotStartDate: at("19h")}, // 13:00 CST
		{HoldID: "h2", ClientID: "me", AppointmentTypeID: "consultation", SpecialistID: "dr-baker", SlotStartDate: at("19h")},
		{HoldID: "h3", ClientID: "other", AppointmentTypeID: "consultation", SpecialistID: "dr-adams", SlotStartDate: at("14h")}, // 08:00 CST, Adams only
		{HoldID: "h4", ClientID: "other", AppointmentTypeID: "adjustment", SpecialistID: "dr-baker", SlotStartDate: at("15h")},   // another type
	}
	r := e.timeslots(t, "from=2026-11-23&days=1&clientId=me")
	pinned := r // the shape and a few slots: the first two and the one with a hold
	pinned.Slots = slices.Clone(r.Slots[:2])
	for _, s := range r.Slots {
		if len(s.HeldSpecialistIDs) > 0 {
			pinned.Slots = append(pinned.Slots, s)
		}
	}
	contractstest.Golden(t, "availability_timeslots", pinned)
	bySt := map[time.Time]Slot{}
	for _, s := range r.Slots {
		bySt[s.SlotStartDate] = s
	}
	if s := bySt[at("19h")]; !slices.Equal(s.SpecialistIDs, []string{"dr-baker"}) || !slices.Equal(s.HeldSpecialistIDs, []string{"dr-adams"}) {
		t.Fatalf("13:00 CST: %+v (own hold kept, other's removed)", s)
	}
	if _, ok := bySt[at("14h")]; ok {
		t.Fatal("a slot held by another client for its only specialist is listed")
	}
	if s := bySt[at("15h")]; !slices.Equal(s.SpecialistIDs, []string{"dr-baker"}) {
		t.Fatalf("another type's hold filtered this one: %+v", s)
	}
	all := e.timeslots(t, "from=2026-11-23&days=1&clientId=me&includeHeld=true")
	if len(all.Slots) != len(r.Slots)+1 || !all.Slots[0].SlotStartDate.Equal(at("14h")) ||
		len(all.Slots[0].SpecialistIDs) != 0 || !slices.Equal(all.Slots[0].HeldSpecialistIDs, []string{"dr-adams"}) {
		t.Fatalf("includeHeld: first slot %+v", all.Slots[0])
	}
	// Without a clientId every hold is someone else's.
	anon := e.timeslots(t, "from=2026-11-23&days=1")
	for _, s := range anon.Slots {
		if s.SlotStartDate.Equal(at("19h")) && len(s.SpecialistIDs) != 0 {
			t.Fatalf("anonymous: 13:00 CST still offers %v", s.SpecialistIDs)
		}
	}
	// The hold engine failing: answered unfiltered (fail open).
	e.holds.err = errors.New("redis down")
	open := e.timeslots(t, "from=2026-11-23&days=1&clientId=me")
	if len(open.Slots) != 18 {
		t.Fatalf("fail-open answer has %d slots, want 18", len(open.Slots))
	}
}

func errCode(t *testing.T, body []byte) (contracts.Code, any) {
	t.Helper()
	var r contracts.ErrorResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("not the error envelope: %s", body)
	}
	return r.Error.Code, r.Error.Details["field"]
}

func TestTimeslotsBadInput(t *testing.T) {
	e := setup(t, redistest.New(t).Client)
	before := e.dump(t)
	cases := []struct {
		path  string
		code  int
		field string
	}{
		{"/v1/appointment-types/nope/timeslots", 404, ""},
		{"/v1/appointment-types/consultation/timeslots?specialistId=ghost", 404, ""},
		{"/v1/appointment-types/adjustment/timeslots?specialistId=dr-adams", 404, ""},
		{"/v1/appointment-types/consultation/timeslots?from=2026-13-01", 400, "from"},
		{"/v1/appointment-types/consultation/timeslots?from=11/23/2026", 400, "from"},
		{"/v1/appointment-types/consultation/timeslots?days=0", 400, "days"},
		{"/v1/appointment-types/consultation/timeslots?days=91", 400, "days"},
		{"/v1/appointment-types/consultation/timeslots?days=abc", 400, "days"},
		{"/v1/appointment-types/consultation/timeslots?includeHeld=maybe", 400, "includeHeld"},
	}
	for _, c := range cases {
		code, body := e.do(t, "GET", c.path, "")
		got, field := errCode(t, body)
		if code != c.code || got.HTTPStatus() != c.code || (c.field != "" && field != c.field) {
			t.Errorf("%s: %d %s, want %d naming %q", c.path, code, body, c.code, c.field)
		}
	}
	if after := e.dump(t); !maps.Equal(before, after) {
		t.Fatal("a refused request changed Redis")
	}
}

func TestRedisDownIs503(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = dead.Close() })
	store, err := availability.NewStore(dead, availability.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := availability.NewCatalog(availability.CatalogConfig{Source: availability.ScheduleSource{Store: store}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	app := newApp(t, cat, nil)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/appointment-types", ""},
		{"GET", "/v1/appointment-types/consultation/timeslots", ""},
		{"GET", "/v1/admin/availability/schedule", ""},
		{"DELETE", "/v1/admin/availability/specialists/dr-adams", ""},
	} {
		code, body := doApp(t, app, r.method, r.path, r.body, true)
		if c, _ := errCode(t, body); code != 503 || c != contracts.CodeUnavailable {
			t.Errorf("%s %s: %d %s, want 503 unavailable", r.method, r.path, code, body)
		}
	}
}

// TestAdminInvalidates walks the admin rows of the invalidation table
// (docs/holds.md#availability-appointment-types-and-timeslots) over HTTP: each change answers 200 and the next timeslot answer of
// exactly the affected types is computed afresh (cached=false).
func TestAdminInvalidates(t *testing.T) {
	rdb := redistest.New(t).Client
	rows := []struct {
		name, method, path, body string
		fresh                    map[string]bool // type → next answer not from the cache
	}{
		{"weekly hours changed", "PUT", "/v1/admin/availability/specialists/dr-adams/weekly-hours",
			`{"mon":[{"start":"10:00","end":"12:00"}]}`, map[string]bool{"consultation": true, "adjustment": false}},
		{"override created", "PUT", "/v1/admin/availability/specialists/dr-baker/overrides/2026-11-24",
			`{"hours":[]}`, map[string]bool{"consultation": true, "adjustment": true}},
		{"override updated", "PUT", "/v1/admin/availability/specialists/dr-chen/overrides/2026-12-26",
			`{"hours":[{"start":"09:00","end":"10:00"}]}`, map[string]bool{"consultation": true, "adjustment": true}},
		{"override deleted", "DELETE", "/v1/admin/availability/specialists/dr-adams/overrides/2026-12-24",
			"", map[string]bool{"consultation": true, "adjustment": false}},
		{"appointment type updated", "PUT", "/v1/admin/availability/appointment-types/adjustment",
			`{"name":"Quick adjustment","durationMinutes":15,"bufferMinutes":5,"specialistIds":["dr-chen"]}`,
			map[string]bool{"consultation": false, "adjustment": true}},
		{"specialist deleted", "DELETE", "/v1/admin/availability/specialists/dr-adams",
			"", map[string]bool{"consultation": true, "adjustment": false}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			e := setup(t, rdb)
			for typ := range r.fresh {
				e.getCached(t, typ) // fill
				if !e.getCached(t, typ) {
					t.Fatalf("%s not cached before the change", typ)
				}
			}
			code, body := e.do(t, r.method, r.path, r.body)
			if code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			for typ, fresh := range r.fresh {
				if cached := e.getCached(t, typ); cached == fresh {
					t.Errorf("%s: next answer cached=%v, want %v", typ, cached, !fresh)
				}
			}
		})
	}
}

func (e *env) getCached(t *testing.T, typ string) bool {
	t.Helper()
	code, body := e.do(t, "GET", "/v1/appointment-types/"+typ+"/timeslots?days=14", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var r TimeslotsResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r.Cached
}

func TestAdminChangeShowsAndIsGuarded(t *testing.T) {
	e := setup(t, redistest.New(t).Client)
	code, _ := doApp(t, e.app, "DELETE", "/v1/admin/availability/specialists/dr-adams", "", false)
	if code != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d", code)
	}
	code, body := e.do(t, "PUT", "/v1/admin/availability/appointment-types/cleaning",
		`{"name":"Cleaning","durationMinutes":60,"specialistIds":["dr-baker"]}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	code, body = e.do(t, "GET", "/v1/appointment-types", "")
	if code != 200 || !strings.Contains(string(body), `"id":"cleaning"`) || !strings.Contains(string(body), `"cooldownMinutes":1440`) {
		t.Fatalf("new type not listed with the default cooldown: %s", body)
	}
	code, body = e.do(t, "GET", "/v1/admin/availability/schedule", "")
	if code != 200 || !strings.Contains(string(body), `"cleaning"`) {
		t.Fatalf("schedule: %d %s", code, body)
	}
}

func TestAdminBadInputChangesNothing(t *testing.T) {
	e := setup(t, redistest.New(t).Client)
	e.getCached(t, "consultation")
	before := e.dump(t)
	cases := []struct {
		method, path, body string
		code               int
		field              string
	}{
		{"PUT", "/v1/admin/availability/specialists/ghost/weekly-hours", `{}`, 404, ""},
		{"PUT", "/v1/admin/availability/specialists/dr-adams/weekly-hours", `{"mon":[{"start":"9","end":"10:00"}]}`, 400, "weeklyHours"},
		{"PUT", "/v1/admin/availability/specialists/dr-adams/weekly-hours", `{"mon":`, 400, ""},
		{"PUT", "/v1/admin/availability/specialists/dr-adams/weekly-hours", `{"mon":"09:00"}`, 400, ""},
		{"PUT", "/v1/admin/availability/specialists/dr-adams/overrides/2026-02-30", `{"hours":[]}`, 400, "date"},
		{"PUT", "/v1/admin/availability/specialists/dr-adams/overrides/2026-12-01", `{"hours":[{"start":"12:00","end":"11:00"}]}`, 400, "hours"},
		{"PUT", "/v1/admin/availability/specialists/ghost/overrides/2026-12-01", `{"hours":[]}`, 404, ""},
		{"DELETE", "/v1/admin/availability/specialists/dr-adams/overrides/2026-12-01", "", 404, ""},
		{"DELETE", "/v1/admin/availability/specialists/dr-adams/overrides/someday", "", 400, "date"},
		{"DELETE", "/v1/admin/availability/specialists/ghost", "", 404, ""},
		{"PUT", "/v1/admin/availability/appointment-types/x", `{"durationMinutes":0}`, 400, "appointmentType"},
		{"PUT", "/v1/admin/availability/appointment-types/x", `{"durationMinutes":"ten"}`, 400, "durationMinutes"},
		{"PUT", "/v1/admin/availability/appointment-types/x", `{"id":"y","durationMinutes":10}`, 400, "id"},
		{"PUT", "/v1/admin/availability/appointment-types/x", `{"durationMinutes":10,"specialistIds":["ghost"]}`, 404, ""},
	}
	for _, c := range cases {
		code, body := e.do(t, c.method, c.path, c.body)
		got, field := errCode(t, body)
		if code != c.code || got.HTTPStatus() != c.code || (c.field != "" && field != c.field) {
			t.Errorf("%s %s %s: %d %s, want %d naming %q", c.method, c.path, c.body, code, body, c.code, c.field)
		}
	}
	if after := e.dump(t); !maps.Equal(before, after) {
		t.Fatal("a refused admin change touched Redis")
	}
}

// With includeHeld, a slot booked through /v1 is answered as booked (the
// board shows it so), at a start where nobody is free any more too;
// without it nothing changes.
func TestTimeslotsShowBookedWithIncludeHeld(t *testing.T) {
	e := setup(t, redistest.New(t).Client)
	before := e.timeslots(t, "from=2026-11-23&days=1&includeHeld=true")
	if len(before.Slots) == 0 || len(before.Slots[0].SpecialistIDs) == 0 {
		t.Fatalf("no free slot to book: %+v", before.Slots)
	}
	first := before.Slots[0]
	for i, spec := range first.SpecialistIDs {
		a := availability.Appointment{AppointmentID: "appt-" + spec, AppointmentTypeID: "consultation", SpecialistID: spec,
			ClientID: "c" + strconv.Itoa(i), SlotStartDate: first.SlotStartDate, SlotEndDate: first.SlotEndDate, BookedAt: monday0800}
		if err := e.cat.RecordBooking(bg, a); err != nil {
			t.Fatal(err)
		}
	}
	after := e.timeslots(t, "from=2026-11-23&days=1&includeHeld=true")
	var got *Slot
	for i := range after.Slots {
		if after.Slots[i].SlotStartDate.Equal(first.SlotStartDate) {
			got = &after.Slots[i]
		}
	}
	if got == nil {
		t.Fatalf("the fully booked start %s is missing: %+v", first.SlotStartDate, after.Slots)
	}
	if !slices.Equal(slices.Sorted(slices.Values(got.BookedSpecialistIDs)), slices.Sorted(slices.Values(first.SpecialistIDs))) || len(got.SpecialistIDs) != 0 {
		t.Fatalf("booked %v free %v, want booked %v free none", got.BookedSpecialistIDs, got.SpecialistIDs, first.SpecialistIDs)
	}
	if !slices.IsSortedFunc(after.Slots, func(a, b Slot) int { return a.SlotStartDate.Compare(b.SlotStartDate) }) {
		t.Fatal("slots out of order")
	}
	code, body := e.do(t, "GET", "/v1/appointment-types/consultation/timeslots?from=2026-11-23&days=1", "")
	if code != 200 || strings.Contains(string(body), "bookedSpecialistIds") {
		t.Fatalf("without includeHeld: %d %s", code, body)
	}
}
