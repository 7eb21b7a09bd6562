package session_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/clocktest"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/booking/session"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	guid  = "877F0034-7E09-4E35-BE0D-397E309DF2E8"
	guid2 = "11111111-2222-3333-4444-555555555555"
)

var t0 = time.Date(2026, 1, 19, 15, 30, 0, 0, time.UTC)

type bundle struct {
	ctx   context.Context
	cache *session.Cache
	rdb   *redis.Client
	clock *clocktest.Clock
}

func setup(t *testing.T, mod ...func(*session.Config)) *bundle {
	t.Helper()
	db := redistest.New(t)
	clk := clocktest.New(t0)
	cfg := session.Config{KeyPrefix: "test", Now: clk.Now}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := session.New(db.Client, cfg)
	require.NoError(t, err)
	return &bundle{ctx: context.Background(), cache: c, rdb: db.Client, clock: clk}
}

func parent() session.Session {
	return session.Session{
		PatientGUID: guid, FamilyID: "fam-1", BookingAuthToken: "eyJwYXlsb2FkIn0.c2ln",
		PhoneNumber: "(412) 555-0100", PatientName: "Pat Parent", UUI: "call-session-123", SessionID: "call-session-123",
	}
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	_, err := session.New(nil, session.Config{TTL: -time.Second})
	require.Error(t, err)
	_, err = session.New(nil, session.Config{KeyPrefix: "{x}"})
	require.Error(t, err)
}

func TestPutWritesEveryKeyWithTheTTL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stored, err := b.cache.Put(b.ctx, parent())
	require.NoError(t, err)
	require.Equal(t, t0, stored.CreatedAt)
	require.Equal(t, t0.Add(15*time.Minute), stored.ExpiresAt)

	keys := []string{
		"test:{bookingSessions}:guid:877F0034-7E09-4E35-BE0D-397E309DF2E8",
		"test:{bookingSessions}:uui:call-session-123",
		"test:{bookingSessions}:phone:4125550100",
	}
	all, err := b.rdb.Keys(b.ctx, "test:{bookingSessions}:*").Result()
	require.NoError(t, err)
	require.ElementsMatch(t, keys, all)
	first := b.rdb.Get(b.ctx, keys[0]).Val()
	for _, k := range keys {
		require.Equal(t, first, b.rdb.Get(b.ctx, k).Val(), "every key holds the whole session")
		ttl := b.rdb.PTTL(b.ctx, k).Val()
		require.Greater(t, ttl, 14*time.Minute)
		require.LessOrEqual(t, ttl, 15*time.Minute)
	}
	contractstest.Golden(t, "booking_session_value", []byte(first))
}

func TestLookupOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := parent()
	_, err := b.cache.Put(b.ctx, p)
	require.NoError(t, err)
	// Another patient of the same call, put later: the uui now names it.
	q := p
	q.PatientGUID, q.PhoneNumber = guid2, ""
	_, err = b.cache.Put(b.ctx, q)
	require.NoError(t, err)

	s, found, err := b.cache.Lookup(b.ctx, strings.ToLower(guid), "call-session-123")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, guid, s.PatientGUID, "patientGUID first (v58)")

	s, found, err = b.cache.Lookup(b.ctx, "", "call-session-123")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, guid2, s.PatientGUID, "then uui")

	s, found, err = b.cache.Lookup(b.ctx, "99999999-2222-3333-4444-555555555555", "call-session-123")
	require.NoError(t, err)
	require.True(t, found, "an unknown GUID falls back to the uui")
	require.Equal(t, guid2, s.PatientGUID)

	_, found, err = b.cache.Lookup(b.ctx, "", "")
	require.NoError(t, err)
	require.False(t, found)
	_, found, err = b.cache.Lookup(b.ctx, "99999999-2222-3333-4444-555555555555", "other-call")
	require.NoError(t, err)
	require.False(t, found)
	_, found, err = b.cache.Lookup(b.ctx, "", guid)
	require.NoError(t, err)
	require.False(t, found, "a uui never matches a patient key")
}

func TestLookupPhone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.cache.Put(b.ctx, parent())
	require.NoError(t, err)
	for _, phone := range []string{"412-555-0100", "4125550100", "(412) 555 0100"} {
		s, found, err := b.cache.LookupPhone(b.ctx, phone)
		require.NoError(t, err)
		require.True(t, found, phone)
		require.Equal(t, parent().FamilyID, s.FamilyID)
	}
	_, found, err := b.cache.LookupPhone(b.ctx, "n/a")
	require.NoError(t, err)
	require.False(t, found)
}

func TestSessionRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := parent()
	p.CreatedAt = t0.Add(-time.Minute).Add(123456 * time.Nanosecond)
	p.ExpiresAt = p.CreatedAt.Add(15 * time.Minute)
	stored, err := b.cache.Put(b.ctx, p)
	require.NoError(t, err)
	got, found, err := b.cache.Lookup(b.ctx, guid, "")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, stored, got)
	require.Equal(t, p.CreatedAt.Truncate(time.Millisecond), got.CreatedAt, "millisecond precision, like JS")
	require.Equal(t, p.PatientName, got.PatientName)
	require.Equal(t, p.SessionID, got.SessionID)
	ttl := b.rdb.PTTL(b.ctx, "test:{bookingSessions}:uui:call-session-123").Val()
	require.LessOrEqual(t, ttl, 14*time.Minute, "keys live until ExpiresAt")
}

func TestPutRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.cache.Put(b.ctx, session.Session{UUI: "x"})
	require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err))
	p := parent()
	p.ExpiresAt = t0
	_, err = b.cache.Put(b.ctx, p)
	require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err), "already expired")
	p = parent()
	p.UUI = strings.Repeat("u", 513)
	_, err = b.cache.Put(b.ctx, p)
	require.Equal(t, contracts.CodeInvalid, contracts.ErrorCode(err))
}

func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *session.Config) { c.TTL = 150 * time.Millisecond })
	_, err := b.cache.Put(b.ctx, parent())
	require.NoError(t, err)
	_, found, err := b.cache.Lookup(b.ctx, guid, "")
	require.NoError(t, err)
	require.True(t, found)
	keys := []string{"test:{bookingSessions}:guid:" + guid, "test:{bookingSessions}:uui:call-session-123",
		"test:{bookingSessions}:phone:4125550100"}
	require.Eventually(t, func() bool { return b.rdb.Exists(b.ctx, keys...).Val() == 0 }, 5*time.Second, 10*time.Millisecond,
		"Redis drops the keys")
	n, err := b.rdb.Exists(b.ctx, keys...).Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestLookupHonoursTheClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.cache.Put(b.ctx, parent())
	require.NoError(t, err)
	b.clock.Advance(15 * time.Minute)
	_, found, err := b.cache.Lookup(b.ctx, guid, "")
	require.NoError(t, err)
	require.True(t, found, "alive up to ExpiresAt")
	b.clock.Advance(time.Millisecond)
	_, found, err = b.cache.Lookup(b.ctx, guid, "call-session-123")
	require.NoError(t, err)
	require.False(t, found, "past ExpiresAt it is gone, whatever Redis still holds")
}

func TestCorruptSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.rdb.Set(b.ctx, "test:{bookingSessions}:uui:bad", "{", time.Minute).Err())
	_, _, err := b.cache.Lookup(b.ctx, "", "bad")
	require.Equal(t, contracts.CodeInternal, contracts.ErrorCode(err))
}

func TestRedisDown(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	c, err := session.New(rdb, session.Config{})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = c.Put(ctx, parent())
	require.ErrorIs(t, err, session.ErrUnavailable)
	require.Equal(t, contracts.CodeUnavailable, contracts.ErrorCode(err))
	_, _, err = c.Lookup(ctx, guid, "call-session-123")
	require.ErrorIs(t, err, session.ErrUnavailable)
	_, _, err = c.LookupPhone(ctx, "4125550100")
	require.ErrorIs(t, err, session.ErrUnavailable)
}
