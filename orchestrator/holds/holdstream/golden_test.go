package holdstream_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
)

// TestStreamEventsGolden pins the JSON of every event kind a stream sends
// (contracts/testdata/holdstream_events.golden; -update rewrites it): the
// connection id and the stream token, different per stream, are replaced
// by placeholders. A hold event carries holds.Ref of the hold id and no
// clientId.
func TestStreamEventsGolden(t *testing.T) {
	e := newEnv(t)
	expires := time.Date(2026, 11, 23, 15, 0, 30, 0, time.UTC)
	e.engine.add(hold("h1", "alice", "type1", "spec1", t0, time.Now().Add(time.Hour)))
	in := e.instance(t, func(c *holdstream.Config) { c.Ping = time.Hour })
	c := in.open(t, "appointmentTypeId=type1&clientId=alice&leaseMs=1000")
	var got []map[string]any
	for _, typ := range []string{"init", "hold", "connected"} {
		m := c.next(t)
		require.Equal(t, typ, m["type"])
		got = append(got, m)
	}
	h := hold("h2", "alice", "type1", "spec2", t0, expires)
	e.engine.publish(t, holdstream.TypeHeartbeat, h)
	e.engine.publish(t, holdstream.TypeHold, hold("h3", "bob", "type1", "spec1", t0.Add(time.Hour), expires))
	got = append(got, c.until(t, "heartbeat"), c.until(t, "hold"), c.until(t, "end"))
	got[1]["holdExpiresAt"] = "NOW+1h"
	for _, m := range got {
		if _, ok := m["connectionId"]; ok {
			m["connectionId"] = "CONNECTION-ID"
		}
		if _, ok := m["streamToken"]; ok {
			m["streamToken"] = "STREAM-TOKEN"
		}
	}
	contractstest.Golden(t, "holdstream_events", got)
}
