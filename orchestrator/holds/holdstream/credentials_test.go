package holdstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
)

// TestEventsCarryNoCredential: a hold id is its hold's secret and a
// clientId (or an IVA session id) no public value, so no stream — the
// owner's included — ever receives either: an event's holdId is holds.Ref
// of the id, it has exactly the public fields of docs/holds.md#who-may-act-on-a-hold plus face and
// isOwnHold, and whatever else the engine's message carries (a clientId,
// an appointmentId) is dropped. isOwnHold is true for the clientId's own
// web holds only (not an IVA reservation whose session id it shares).
func TestEventsCarryNoCredential(t *testing.T) {
	e := newEnv(t)
	e.engine.add(hold("secret-snap", "alice", "type1", "spec1", t0, time.Now().Add(time.Minute)))
	iva := hold("secret-iva", "alice", "type1", "spec2", t0, time.Now().Add(time.Minute))
	iva.Face = holds.FaceIVA
	e.engine.add(iva)
	in := e.instance(t, nil)
	alice := in.open(t, "appointmentTypeId=type1&clientId=alice")
	bob := in.open(t, "appointmentTypeId=type1&clientId=bob")
	for _, c := range []*client{alice, bob} {
		c.until(t, "connected")
	}
	raw := fmt.Sprintf(`{"type":"confirm","holdId":"secret-live","clientId":"alice","appointmentId":"secret-live",`+
		`"appointmentTypeId":"type1","specialistId":"spec3","slotStartDate":%q,"slotEndDate":%q,"holdExpiresAt":%q,"face":"web","extra":"x"}`,
		t0.Format(time.RFC3339), t0.Add(30*time.Minute).Format(time.RFC3339), time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
	require.NoError(t, e.db.Client.Publish(context.Background(), e.prefix+"holds:events:type1", raw).Err())
	for _, c := range []*client{alice, bob} {
		require.Equal(t, ref("secret-live"), c.until(t, holdstream.TypeConfirm)["holdId"])
	}

	wantKeys := []string{"appointmentTypeId", "face", "holdExpiresAt", "holdId", "isOwnHold", "slotEndDate", "slotStartDate", "specialistId", "type"}
	for name, c := range map[string]*client{"alice": alice, "bob": bob} {
		c.mu.Lock()
		lines := slices.Clone(c.lines)
		c.mu.Unlock()
		own := map[string]bool{}
		for _, l := range lines {
			data, ok := strings.CutPrefix(l, "data: ")
			if !ok || strings.Contains(data, `"type":"init"`) { // init echoes the stream's own clientId
				continue
			}
			for _, secret := range []string{"secret-snap", "secret-iva", "secret-live", `"clientId"`, "alice", "appointmentId", "extra"} {
				require.NotContains(t, data, secret, "%s's stream: %s", name, data)
			}
			if strings.Contains(data, `"holdId"`) {
				m := decode(t, data)
				require.Equal(t, wantKeys, sortedKeys(m), data)
				own[m["holdId"].(string)] = m["isOwnHold"].(bool)
			}
		}
		require.Equal(t, map[string]bool{ref("secret-snap"): name == "alice", ref("secret-iva"): false, ref("secret-live"): name == "alice"}, own, name)
	}
}

func decode(t *testing.T, data string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(data), &m), data)
	return m
}

func sortedKeys(m map[string]any) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.Sort(keys)
	return keys
}
