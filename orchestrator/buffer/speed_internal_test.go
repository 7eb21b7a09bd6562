package buffer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/redistest"
)

// Generated messageIds are random version-4 UUIDs in canonical form, and
// distinct, across the pool's refills.
func TestGeneratedIDsAreRandomUUIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 3 * 256 {
		s := ids.next()
		u, err := uuid.Parse(s)
		require.NoError(t, err)
		require.Equal(t, s, u.String(), "canonical form")
		require.EqualValues(t, 4, u.Version())
		require.Equal(t, uuid.RFC4122, u.Variant())
		require.False(t, seen[s], "duplicate id %s", s)
		seen[s] = true
	}
}

// The hand-written task payload is byte for byte json.Marshal's, for
// plain and awkward values alike.
func TestEnvelopeEncodingMatchesJSONMarshal(t *testing.T) {
	at := time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.UTC)
	cases := []envelope{
		{MessageID: "u2028", Payload: json.RawMessage("[\"a\u2028b\"]"), CreatedAt: at},
		{MessageID: "m-1", Priority: 2, Payload: json.RawMessage(`{"a":1}`), MaxRetries: 3, CreatedAt: at},
		{MessageID: "m.2:x_y", Priority: 0, Payload: json.RawMessage("{ \"a\" :\n [1, 2],\t\"s\": \"x y\" }"), MaxRetries: 0,
			IdempotencyKey: `k "quoted" \ <tag> & é` + "\x01", CreatedAt: at.Add(time.Nanosecond)},
		{MessageID: "m3", Priority: 3, Payload: nil, MaxRetries: 100, CreatedAt: at.Truncate(time.Second),
			Metadata: contracts.BufferMetadata{CorrelationID: "c", Source: "s", UserID: "u", CompanyID: "co", TraceID: "t",
				Custom: json.RawMessage(`{"x": [true, null]}`)}},
		{MessageID: "m4", Payload: json.RawMessage(`"<b>&amp;</b>"`), Metadata: contracts.BufferMetadata{Custom: json.RawMessage(`null`)}, CreatedAt: at},
		{MessageID: "m5", Payload: json.RawMessage(`{}`), IdempotencyKey: "k", CreatedAt: at, Shard: 5}, // a place in shard 5
	}
	for _, env := range cases {
		got, err := env.appendJSON(nil)
		require.NoError(t, err)
		want, err := json.Marshal(env)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		var a, b envelope
		require.NoError(t, json.Unmarshal(got, &a), "%s", got)
		require.NoError(t, json.Unmarshal(want, &b))
		require.Equal(t, b, a, "%s\nvs %s", got, want)
		var c envelope
		require.NoError(t, decodeEnvelope(got, &c), "%s", got)
		require.Equal(t, b, c, "decodeEnvelope: %s", got)
		var ga, gb any
		require.NoError(t, json.Unmarshal(got, &ga))
		require.NoError(t, json.Unmarshal(want, &gb))
		require.Equal(t, gb, ga, "the same JSON value")
	}
	_, err := (&envelope{MessageID: "m", Payload: json.RawMessage(`{"a":`)}).appendJSON(nil)
	require.ErrorIs(t, err, errPayloadNotJSON)
	_, err = (&envelope{MessageID: "m", Payload: json.RawMessage(`{"a": }`)}).appendJSON(nil)
	require.ErrorIs(t, err, errPayloadNotJSON)
}

// decodeEnvelope reads what json.Unmarshal reads, without reflection for
// the usual message, and refuses what it refuses, whatever the bytes.
func TestEnvelopeDecodingMatchesJSONUnmarshal(t *testing.T) {
	at := time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.UTC)
	plain := []envelope{
		{MessageID: "m-1", Priority: 2, Payload: json.RawMessage(`{"a":[1,{"b":"x,}]\"y"}],"c":null}`), MaxRetries: 3, CreatedAt: at},
		{MessageID: "m5", Payload: json.RawMessage(`"s,t"`), IdempotencyKey: "k", CreatedAt: at, Shard: 5},
		{MessageID: "m6", Priority: 3, Payload: json.RawMessage(`-1.5e3`), MaxRetries: -1, CreatedAt: at.Truncate(time.Second)},
		{MessageID: "m7", Payload: nil, CreatedAt: at},
	}
	for _, env := range plain {
		raw, err := env.appendJSON(nil)
		require.NoError(t, err)
		var fast envelope
		require.True(t, decodeEnvelopeFast(raw, &fast), "the usual message takes the fast path: %s", raw)
		var want envelope
		require.NoError(t, json.Unmarshal(raw, &want))
		require.Equal(t, want, fast, "%s", raw)
		// Every prefix, and every byte changed, decodes as json.Unmarshal
		// decodes it (or fails as it fails).
		for i := 0; i <= len(raw); i++ {
			variants := [][]byte{raw[:i]}
			for _, c := range []byte{'"', '\\', ',', '}', ']', '0', '-', ' ', 0x01, 0xff} {
				if i < len(raw) {
					v := bytes.Clone(raw)
					v[i] = c
					variants = append(variants, v)
				}
			}
			for _, v := range variants {
				var a, b envelope
				errA, errB := decodeEnvelope(v, &a), json.Unmarshal(v, &b)
				require.Equal(t, errB == nil, errA == nil, "%q: %v vs %v", v, errA, errB)
				if errB == nil {
					require.Equal(t, b, a, "%q", v)
				}
			}
		}
	}
}

// A resync keeps the places this instance holds in credit counted (its
// field of the credit hash, written by the admission that reserved them):
// they are used (each enqueue without a round trip) or given back later.
func TestDepthResyncKeepsTheCredit(t *testing.T) {
	db := redistest.New(t)
	g := &depthGauge{rdb: db.Client, key: depthKey("flowgate"), creditKey: creditKey("flowgate"), instance: "me", stale: creditStale(time.Hour),
		flush: time.Hour, reconcile: time.Hour, log: slog.New(slog.NewTextHandler(io.Discard, nil)), th: Thresholds{Normal: 100, Warning: 500, Alert: 900, Max: 1000}}
	ctx := context.Background()
	res, err := admitScript.Run(ctx, db.Client, []string{g.key, g.creditKey}, 1000, 1000, 7, g.instance).Slice()
	require.NoError(t, err)
	require.Equal(t, []any{[]any{int64(4), int64(7)}}, res, "no message, 7 places reserved ahead")
	g.credit.add(7)
	require.NoError(t, db.Client.Set(ctx, g.key, 0, 0).Err()) // drift
	require.NoError(t, g.resync(ctx))
	require.EqualValues(t, 7, g.Value())
	n, err := db.Client.Get(ctx, g.key).Int64()
	require.NoError(t, err)
	require.EqualValues(t, 7, n, "no task queued, 7 places held")

	require.True(t, g.credit.take())
	require.Zero(t, g.credit.idle(false), "credit taken from since the last flush is kept")
	require.EqualValues(t, 6, g.credit.idle(false), "idle for a whole interval: given back")
	require.False(t, g.credit.take())
}
