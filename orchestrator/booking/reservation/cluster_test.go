package reservation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/booking/slots"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// On Redis Cluster the keys of different slots live in different hash
// slots: each script touches one key, and Filter's pipeline is split by
// slot by the cluster client.
func TestOnRedisCluster(t *testing.T) {
	t.Parallel()
	c := rediscluster.Start(t)
	b := setupOn(t, c.Client())
	var list []slots.Slot
	for i := range 60 {
		list = append(list, slot(slots.FormatTime(time.Date(2026, 3, 11, 7, 0, 0, 0, time.UTC).Add(time.Duration(i)*5*time.Minute))))
	}
	for i := 0; i < len(list); i += 3 {
		res, err := b.st.Reserve(b.ctx, list[i], sessA, "A")
		require.NoError(t, err)
		require.Equal(t, reservation.Reserved, res.Outcome)
	}
	_, err := b.st.Reserve(b.ctx, list[0], sessB, "B")
	requireHeld(t, err)

	out, err := b.st.Filter(b.ctx, list, sessB)
	require.NoError(t, err)
	require.Len(t, out, 40)
	out, err = b.st.Filter(b.ctx, list, sessA)
	require.NoError(t, err)
	require.Len(t, out, 60)

	_, err = b.st.Confirm(b.ctx, list[0], sessA, "A")
	require.NoError(t, err)
	ok, err := b.st.Release(b.ctx, list[3], sessA)
	require.NoError(t, err)
	require.True(t, ok)
	out, err = b.st.Filter(b.ctx, list, sessB)
	require.NoError(t, err)
	require.Len(t, out, 41)
}
