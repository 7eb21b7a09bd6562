package ops_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
	"github.com/flowgate/flowgate/orchestrator/ops"
)

// wideOpen are OPS_KEY_PREFIXES that would open every family of
// flowgate's, as an operator might set them: the guard refuses all the
// same.
var wideOpen = []string{"flowgate:", "FLOWGATE:", "Flowgate:", "asynq:", "ASYNQ:", "rate:", "holds:", "hold:", "client",
	"SlotReservation:", "slotreservation:", "holdstream:", "{"}

var placeholder = regexp.MustCompile(`<[^>]*>`)

// attackKeys are the keys of family f an attacker tries: each documented
// key, with its placeholders filled, in every spelling flowgate uses or a
// caller may send (shard and Cluster tags, case, white space, a
// zero-width space, a NUL).
func attackKeys(f keyspace.Family) []string {
	var out []string
	for _, d := range f.Docs {
		k := placeholder.ReplaceAllString(strings.ReplaceAll(d, "<anything else>", "x"), "x1")
		out = append(out, k, strings.ToUpper(k), " "+k, k+"\n", strings.Replace(k, ":", ":\u200b", 1), k+"\x00")
		if strings.Contains(k, "{tasks}") {
			out = append(out, strings.Replace(k, "{tasks}", "{tasks:2.5}", 1))
		}
		if strings.Contains(k, "{buffer}") {
			out = append(out, strings.Replace(k, "{buffer}", "{buffer:1.3}", 1))
		}
		if !strings.HasPrefix(k, "flowgate:") && !strings.HasPrefix(k, "asynq:") && !strings.HasPrefix(k, "rate:") &&
			!strings.HasPrefix(k, "{") {
			out = append(out, "{holds}:"+k, "{holds:3.7}:"+k)
		}
	}
	return out
}

// counter counts the attacks sent through the HTTP routes and those
// accepted (any 2xx).
type counter struct{ attempts, accepted int }

func (c *counter) try(t *testing.T, f *fixture, family, method, path, body string) {
	t.Helper()
	c.attempts++
	st, raw := f.do(t, method, path, body)
	if st < 300 {
		c.accepted++
		t.Errorf("%s: %s %s %s accepted: %d %s", family, method, path, body, st, raw)
		return
	}
	require.Equal(t, http.StatusForbidden, st, "%s: %s %s %s: %s", family, method, path, body, raw)
	var e struct {
		Success bool
		Error   struct {
			Code    string
			Details map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
	require.Equal(t, "protected_key", e.Error.Code, "%s: %s", family, raw)
	require.Equal(t, family, e.Error.Details["family"], "%s", raw)
	require.Equal(t, "key", e.Error.Details["field"], "%s", raw)
}

func jsonKey(key string) string {
	b, _ := json.Marshal(map[string]any{"key": key, "value": map[string]any{"forged": true}})
	return string(b)
}

// Every key family of flowgate's state is refused by redisSet and by both
// redisDelete forms, under every spelling, with the prefixes as shipped
// and opened wide; caches may be deleted, never written; the families
// that carry credentials or personal data are not read. Each refused key
// still holds its value afterwards: nothing was accepted.
func TestGuardRefusesFlowgateState(t *testing.T) {
	for name, prefixes := range map[string][]string{"default": nil, "wide_open": wideOpen} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, func(c *ops.Config) { c.Prefixes = prefixes })
			ctx := context.Background()
			rdb := f.db.Client
			var c counter
			for _, fam := range keyspace.Families() {
				if fam.Class == keyspace.Foreign || fam.Class == keyspace.Operator {
					continue
				}
				for _, key := range attackKeys(fam) {
					require.NoError(t, rdb.Set(ctx, key, `"sentinel"`, 0).Err())
					c.try(t, f, fam.Name, http.MethodPost, base+"/redisSet", jsonKey(key))
					if fam.Class == keyspace.State {
						c.try(t, f, fam.Name, http.MethodPost, base+"/redisDelete", jsonKey(key))
						c.try(t, f, fam.Name, http.MethodDelete, base+"/redisDelete?key="+url.QueryEscape(key), "")
					}
					if fam.Secret {
						c.try(t, f, fam.Name, http.MethodGet, base+"/redisGet?key="+url.QueryEscape(key), "")
					}
					require.Equal(t, `"sentinel"`, rdb.Get(ctx, key).Val(), "%s: %q changed", fam.Name, key)
					if fam.Class == keyspace.Cache && strings.HasPrefix(key, "flowgate:") && name == "default" {
						st, body := f.do(t, http.MethodPost, base+"/redisDelete", jsonKey(key))
						require.Equal(t, http.StatusOK, st, "a cache may be cleared: %s", body)
						require.Zero(t, rdb.Exists(ctx, key).Val())
					}
					rdb.Del(ctx, key)
				}
			}
			require.Greater(t, c.attempts, 500)
			require.Zero(t, c.accepted)
			t.Logf("ops guard (%s prefixes): attempts=%d accepted=%d", name, c.attempts, c.accepted)
		})
	}
}

// The shard marker: deleting it through the ops API was the way to start
// over the data with another REDIS_SHARDS (issue 34). Refused, with the
// error envelope golden; the marker stays.
func TestGuardKeepsTheShardMarker(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rdb := f.db.Client
	require.NoError(t, rdb.Set(ctx, keyspace.ShardMarker, "6", 0).Err())
	st, body := f.do(t, http.MethodPost, base+"/redisDelete", `{"key":"flowgate:redis-shards"}`)
	require.Equal(t, http.StatusForbidden, st, "%s", body)
	golden(t, "ops_error_protected_delete", body)
	st, body = f.do(t, http.MethodDelete, base+"/redisDelete?key=flowgate%3Aredis-shards", "")
	require.Equal(t, http.StatusForbidden, st, "%s", body)
	st, body = f.do(t, http.MethodPost, base+"/redisSet", `{"key":"flowgate:redis-shards","value":"1"}`)
	require.Equal(t, http.StatusForbidden, st, "%s", body)
	golden(t, "ops_error_protected_set", body)
	require.Equal(t, "6", rdb.Get(ctx, keyspace.ShardMarker).Val())
	// Not a secret: an operator may read which count the data has.
	st, body = f.do(t, http.MethodGet, base+"/redisGet?key=flowgate:redis-shards", "")
	require.Equal(t, http.StatusOK, st, "%s", body)
	require.Equal(t, "6", string(body))

	// A booking session carries the bookingAuthToken: never read out.
	require.NoError(t, rdb.Set(ctx, "flowgate:{bookingSessions}:guid:G1", `{"bookingAuthToken":"t"}`, 0).Err())
	st, body = f.do(t, http.MethodGet, base+"/redisGet?key=flowgate:{bookingSessions}:guid:G1", "")
	require.Equal(t, http.StatusForbidden, st, "%s", body)
	golden(t, "ops_error_protected_get", body)
}

// A read the hold engine maps (ReadKey: the face key under its shard's
// tag) is checked again where it lands: a mapping into a secret family is
// refused.
func TestGuardChecksTheMappedReadKey(t *testing.T) {
	f := newFixture(t, func(c *ops.Config) {
		c.ReadPrefixes = []string{"SlotReservation:"}
		c.ReadKey = func(key string) string { return "{holds:3.7}:holds:records" }
	})
	st, body := f.do(t, http.MethodGet, base+"/redisGet?key=SlotReservation:loc:20260311:0910:col", "")
	require.Equal(t, http.StatusForbidden, st, "%s", body)
	require.Equal(t, "protected_key", errCode(t, body))
}

// Keys that are not flowgate's state still pass: the operators' own
// flowgate:ops:…, a cache's deletion, a foreign key under a prefix the
// operator opened (the Node-RED flow's SlotCache-… keys).
func TestGuardLetsOtherKeysThrough(t *testing.T) {
	f := newFixture(t, func(c *ops.Config) { c.Prefixes = []string{"flowgate:", "SlotCache-"} })
	ctx := context.Background()
	for _, key := range []string{"flowgate:ops:note", "SlotCache-loc-Tier1"} {
		st, body := f.do(t, http.MethodPost, base+"/redisSet", `{"key":"`+key+`","value":{"a":1}}`)
		require.Equal(t, http.StatusOK, st, "%s", body)
		st, body = f.do(t, http.MethodGet, base+"/redisGet?key="+key, "")
		require.Equal(t, http.StatusOK, st, "%s", body)
		require.JSONEq(t, `{"a":1}`, string(body))
		st, body = f.do(t, http.MethodPost, base+"/redisDelete", `{"key":"`+key+`"}`)
		require.Equal(t, http.StatusOK, st, "%s", body)
		require.Zero(t, f.db.Client.Exists(ctx, key).Val())
	}
}
