package cloud9_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/test/redistest"
)

func TestLimiterSpacing(t *testing.T) {
	db := redistest.New(t)
	l := cloud9.NewRedisLimiter(db.Client, cloud9.WriteRates(cloud9.Rate{N: 5, Per: time.Minute}), cloud9.Rate{},
		cloud9.WithMargin(250*time.Millisecond))
	require.Equal(t, 12250*time.Millisecond, l.Spacing("SetAppointment"))
	require.Zero(t, l.Spacing("GetOnlineReservations"), "reads are not limited")
}
