package reservation_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking/reservation"
	"github.com/flowgate/flowgate/orchestrator/slots"

	"github.com/flowgate/flowgate/test/redistest"
)

// Failing open (principle 5 of docs/reference/README.md): with Redis down, slot lists are not filtered and
// Reserve says "unavailable" so the booking can proceed.
func TestFailOpenWhenRedisIsDown(t *testing.T) {
	t.Parallel()
	b := setupOn(t, redistest.Dead(t))
	list := []slots.Slot{s910, slot("3/11/2026 10:00 AM")}

	out, err := b.st.Filter(b.ctx, list, sessB)
	require.ErrorIs(t, err, reservation.ErrUnavailable)
	require.Equal(t, list, out, "input unchanged")
	require.Contains(t, b.logs.String(), "fail open")

	held, err := b.st.HeldByOthers(b.ctx, sessB, list)
	require.ErrorIs(t, err, reservation.ErrUnavailable)
	require.Equal(t, []bool{false, false}, held)

	_, err = b.st.Reserve(b.ctx, s910, sessA, "A")
	require.ErrorIs(t, err, reservation.ErrUnavailable)
	require.NotErrorIs(t, err, reservation.ErrReservedByOther)
	require.Equal(t, contracts.CodeUnavailable, contracts.ErrorCode(err))
	_, err = b.st.Confirm(b.ctx, s910, sessA, "A")
	require.ErrorIs(t, err, reservation.ErrUnavailable)
	_, err = b.st.Release(b.ctx, s910, sessA)
	require.ErrorIs(t, err, reservation.ErrUnavailable)
	_, _, _, err = b.st.Get(b.ctx, s910)
	require.ErrorIs(t, err, reservation.ErrUnavailable)
}
