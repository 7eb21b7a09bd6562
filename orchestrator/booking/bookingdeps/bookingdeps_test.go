package bookingdeps_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
	"github.com/flowgate/flowgate/orchestrator/booking/bookingdeps"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/test/redistest"
)

type env struct {
	sim    *cloud9sim.Sim
	client *cloud9.Client
	cache  *slots.Cache
	db     *redistest.DB
}

func setup(t *testing.T) env {
	t.Helper()
	sim := cloud9sim.New(cloud9sim.Config{WriteLimit: cloud9sim.Unlimited})
	url, stop, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop(context.Background()) })
	c, err := cloud9.New(cloud9.Config{Endpoint: url, ClientID: "x", Username: "x", Password: "x", VendorUsername: "test"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	db := redistest.New(t)
	cache, err := slots.NewCache(db.Client, slots.CacheConfig{KeyPrefix: "test"})
	require.NoError(t, err)
	return env{sim: sim, client: c, cache: cache, db: db}
}

func tomorrow() string { return time.Now().AddDate(0, 0, 1).Format("01/02/2006") }

// The slot source reads the simulator through the Redis cache; a fresh
// list is answered without asking Cloud9 again, and a stale one stands in
// when Cloud9 fails — only while younger than MaxStale
// (SLOT_CACHE_MAX_STALE): an older one is never offered, the search fails
// and the caller is transferred.
func TestSlotSourceCachesAndFallsBack(t *testing.T) {
	e := setup(t)
	var ahead time.Duration // how far the source's clock runs ahead of the cache's
	src := bookingdeps.SlotSource{Cloud9: e.client, Cache: e.cache, LocationGUID: cloud9sim.DefaultLocationGUID,
		FreshFor: time.Hour, Search: bookingdeps.SearchPolicy{Attempts: 1, Windows: 1},
		Now: func() time.Time { return time.Now().Add(ahead) }}
	ctx := context.Background()
	q := booking.SlotQuery{StartDate: tomorrow()}
	first, err := src.Slots(ctx, q)
	require.NoError(t, err)
	require.NotEmpty(t, first.Slots)
	require.Equal(t, "45", first.Slots[0].Minutes)
	calls := e.sim.Calls("GetOnlineReservations")

	again, err := src.Slots(ctx, q)
	require.NoError(t, err)
	require.Equal(t, len(first.Slots), len(again.Slots))
	require.Equal(t, calls, e.sim.Calls("GetOnlineReservations"), "a fresh cached list is answered from Redis")

	src.FreshFor = time.Nanosecond // stale now
	e.sim.SetFaults(cloud9sim.Faults{ErrorRate: 1, Procedures: []string{"GetOnlineReservations"}})
	stale, err := src.Slots(ctx, q)
	require.NoError(t, err, "a stale list stands in when Cloud9 fails")
	require.Equal(t, len(first.Slots), len(stale.Slots))
	require.True(t, stale.Cache.Used)

	ahead = bookingdeps.DefaultMaxStale + time.Second // the list is now older than SLOT_CACHE_MAX_STALE
	reads := e.sim.Calls("GetOnlineReservations")
	old, err := src.Slots(ctx, q)
	require.Error(t, err, "a list older than SLOT_CACHE_MAX_STALE is never offered when Cloud9 fails")
	require.Empty(t, old.Slots)
	require.False(t, old.Cache.Used)
	require.Equal(t, reads+1, e.sim.Calls("GetOnlineReservations"), "Cloud9 was asked once (one try configured)")
	src.MaxStale = time.Hour
	old, err = src.Slots(ctx, q)
	require.NoError(t, err, "within a longer SLOT_CACHE_MAX_STALE it still stands in")
	require.Equal(t, len(first.Slots), len(old.Slots))
	ahead = 0

	src.LocationGUID = "00000000-0000-0000-0000-000000000000"
	e.sim.SetFaults(cloud9sim.Faults{})
	other, err := src.Slots(ctx, booking.SlotQuery{StartDate: tomorrow(), ScheduleViewGUIDs: []string{cloud9sim.DefaultScheduleViewGUID}})
	require.NoError(t, err)
	require.Empty(t, other.Slots, "other locations' slots are left out")
}

// A bookingToken decodes only while its slot is offered (in the cache);
// garbage is a typed error; a cache that cannot answer is passed (fail open).
func TestBookingTokensCheckTheCache(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	src := bookingdeps.SlotSource{Cloud9: e.client, Cache: e.cache, LocationGUID: cloud9sim.DefaultLocationGUID}
	res, err := src.Slots(context.Background(), booking.SlotQuery{StartDate: tomorrow()})
	require.NoError(t, err)
	s := res.Slots[0]
	codec := bookingdeps.BookingTokens{Cache: e.cache}
	tok, err := codec.Encode(booking.SlotRef{StartTime: s.StartTime, ScheduleViewGUID: s.ScheduleViewGUID,
		ScheduleColumnGUID: s.ScheduleColumnGUID, AppointmentTypeGUID: s.AppointmentTypeGUID, Minutes: 45})
	require.NoError(t, err)
	ref, err := codec.Decode(ctx, tok)
	require.NoError(t, err)
	require.Equal(t, s.StartTime, ref.StartTime)

	unknown, err := codec.Encode(booking.SlotRef{StartTime: "1/5/2099 9:00:00 AM", ScheduleViewGUID: s.ScheduleViewGUID,
		ScheduleColumnGUID: s.ScheduleColumnGUID, AppointmentTypeGUID: s.AppointmentTypeGUID, Minutes: 45})
	require.NoError(t, err)
	_, err = codec.Decode(ctx, unknown)
	require.ErrorIs(t, err, bookingdeps.ErrUnknownSlot)
	_, err = codec.Decode(ctx, "not-a-token")
	require.ErrorIs(t, err, slots.ErrMalformedToken)

	// Booked (or refused by Cloud9): the slot leaves the cache and its
	// token is no longer accepted.
	require.NoError(t, src.Invalidate(context.Background(), ref))
	_, err = codec.Decode(ctx, tok)
	require.ErrorIs(t, err, bookingdeps.ErrUnknownSlot)

	down, err := slots.NewCache(deadClient(t), slots.CacheConfig{KeyPrefix: "test"})
	require.NoError(t, err)
	_, err = bookingdeps.BookingTokens{Cache: down}.Decode(ctx, unknown)
	require.NoError(t, err, "slot cache unavailable: the token passes, Cloud9 still checks the slot")
}

// The client is booking.Cloud9 as it is (no adapter): its typed errors
// carry what the booking path decides on — a dropped answer after commit
// is uncertain, a business refusal has the seed's class, a refused
// connection certainly never reached Cloud9.
func TestCloud9ClientIsTheBookingPort(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	var a booking.Cloud9 = e.client
	guid, _, err := a.SetPatient(ctx, cloud9.PatientInput{FirstName: "A", LastName: "B",
		ProviderGUID: cloud9sim.DefaultOrthodontistGUID, LocationGUID: cloud9sim.DefaultLocationGUID})
	require.NoError(t, err)
	res, err := bookingdeps.SlotSource{Cloud9: e.client, Cache: e.cache}.Slots(ctx, booking.SlotQuery{StartDate: tomorrow()})
	require.NoError(t, err)
	s := res.Slots[0]
	in := cloud9.AppointmentInput{PatientGUID: guid, StartTime: s.StartTime, ScheduleViewGUID: s.ScheduleViewGUID,
		ScheduleColumnGUID: s.ScheduleColumnGUID, AppointmentTypeGUID: s.AppointmentTypeGUID, Minutes: 45}

	e.sim.SetFaults(cloud9sim.Faults{DropAfterCommit: map[string]int{"SetAppointment": 1}})
	_, _, err = a.SetAppointment(ctx, in)
	var ce *cloud9.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	require.True(t, ce.Uncertain, "dropped after commit: %+v", ce)
	list, err := a.GetAppointmentListByPatient(ctx, guid)
	require.NoError(t, err)
	require.Len(t, list, 1, "the dropped call committed")

	_, _, err = a.SetAppointment(ctx, in)
	require.True(t, errors.As(err, &ce))
	require.Equal(t, cloud9.ClassSlotNotAvailable, ce.Class)
	require.False(t, ce.Uncertain)

	refused, err := cloud9.New(cloud9.Config{Endpoint: "http://" + closedAddr(t) + "/GetData.ashx", ClientID: "x",
		Username: "x", Password: "x", VendorUsername: "test"})
	require.NoError(t, err)
	_, _, err = booking.Cloud9(refused).SetAppointment(ctx, in)
	require.True(t, errors.As(err, &ce))
	require.True(t, ce.Unreached(), "connection refused: %+v", ce)
	require.False(t, ce.Uncertain)
}

// A reservation held by another session is booking.ErrSlotReserved;
// the token adapter maps the signer's refusals to AuthError codes.
func TestReservationsAndTokens(t *testing.T) {
	db := redistest.New(t)
	st, err := reservation.New(db.Client, reservation.Config{KeyPrefix: "test"})
	require.NoError(t, err)
	r := bookingdeps.Reservations{R: st}
	ctx := context.Background()
	h := booking.SlotHold{LocationGUID: cloud9sim.DefaultLocationGUID, StartTime: "3/11/2026 9:10:00 AM",
		ScheduleColumnGUID: "07687884-7e37-49aa-8028-d43b751c9034", SessionID: "a"}
	require.NoError(t, r.Reserve(ctx, h))
	other := h
	other.SessionID = "b"
	require.ErrorIs(t, r.Reserve(ctx, other), booking.ErrSlotReserved)
	held, err := r.HeldByOthers(ctx, "b", []booking.SlotHold{h})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, held)
	require.NoError(t, r.Release(ctx, h))
	require.NoError(t, r.Reserve(ctx, other))

	signer, err := authtoken.New(authtoken.Config{Secret: []byte("0123456789abcdef0123")})
	require.NoError(t, err)
	tk := bookingdeps.Tokens{S: signer}
	tok, err := tk.Issue("call-1", "877F0034-7E09-4E35-BE0D-397E309DF2E8")
	require.NoError(t, err)
	require.NoError(t, tk.Validate(tok, "877F0034-7E09-4E35-BE0D-397E309DF2E8"))
	err = tk.Validate(tok, "11111111-1111-1111-1111-111111111111")
	var ae *booking.AuthError
	require.True(t, errors.As(err, &ae))
	require.Equal(t, "BOOKING_AUTH_GUID_MISMATCH", ae.Code)
	require.Equal(t, "877F0034-7E09-4E35-BE0D-397E309DF2E8", ae.TokenPatientGUID)
	require.True(t, errors.As(tk.Validate(tok[:len(tok)-3]+"xyz", "877F0034-7E09-4E35-BE0D-397E309DF2E8"), &ae))
	require.Equal(t, "BOOKING_AUTH_SIGNATURE_INVALID", ae.Code)
}

func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func deadClient(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: closedAddr(t), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// FindSlot answers a raw-field booking's slot as a bookingToken's decode
// would: a cached slot with its length, found by view, column and start
// (any spelling of the time); a slot not cached is not found; a cache
// that cannot answer says so (the booking service then searches).
func TestBookingTokensFindSlot(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	src := bookingdeps.SlotSource{Cloud9: e.client, Cache: e.cache, LocationGUID: cloud9sim.DefaultLocationGUID}
	res, err := src.Slots(ctx, booking.SlotQuery{StartDate: tomorrow()})
	require.NoError(t, err)
	s := res.Slots[0]
	codec := bookingdeps.BookingTokens{Cache: e.cache}
	st, err := slots.ParseTime(s.StartTime)
	require.NoError(t, err)
	ref, found, err := codec.FindSlot(ctx, booking.SlotRef{StartTime: st.Format("01/02/2006 03:04 PM"),
		ScheduleViewGUID: s.ScheduleViewGUID, ScheduleColumnGUID: s.ScheduleColumnGUID})
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, 45, ref.Minutes)
	require.Equal(t, s.StartTime, ref.StartTime)

	_, found, err = codec.FindSlot(ctx, booking.SlotRef{StartTime: st.Add(15 * time.Minute).Format("01/02/2006 03:04 PM"),
		ScheduleViewGUID: s.ScheduleViewGUID, ScheduleColumnGUID: s.ScheduleColumnGUID})
	require.NoError(t, err)
	require.False(t, found, "off the grid")

	down, err := slots.NewCache(deadClient(t), slots.CacheConfig{KeyPrefix: "test"})
	require.NoError(t, err)
	_, found, err = bookingdeps.BookingTokens{Cache: down}.FindSlot(ctx, ref)
	require.Error(t, err)
	require.False(t, found)
}
