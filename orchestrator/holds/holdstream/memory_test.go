package holdstream_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
)

// TestMemoryReturnedAfterABurstOfOpens: ReleaseBurst opens, then
// ReleaseQuiet without one, return the burst's memory to the OS once;
// fewer opens do not.
func TestMemoryReturnedAfterABurstOfOpens(t *testing.T) {
	e := newEnv(t)
	in := e.instance(t, func(c *holdstream.Config) { c.ReleaseBurst, c.ReleaseQuiet = 3, 50*time.Millisecond })
	releases := func() float64 { return metric(t, in.reg, "holdstream_memory_releases_total", nil) }
	for i := range 3 {
		in.open(t, fmt.Sprintf("appointmentTypeId=type1&clientId=c%d", i)).until(t, "connected")
	}
	require.Eventually(t, func() bool { return releases() == 1 }, 3*time.Second, 10*time.Millisecond)
	in.open(t, "appointmentTypeId=type1&clientId=c9").until(t, "connected")
	require.Never(t, func() bool { return releases() != 1 }, 200*time.Millisecond, 10*time.Millisecond, "one open is not a burst")
	require.EqualValues(t, 1, releases(), "one open is not a burst")
}
