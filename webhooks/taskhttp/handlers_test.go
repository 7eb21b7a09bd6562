package taskhttp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/taskhttp"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	db := redistest.New(t)
	ledger, err := tasks.New(db.Client, tasks.Config{KeyPrefix: "test"})
	require.NoError(t, err)
	replay := taskhttp.ReplayerFunc(func(context.Context, string, contracts.RequeueRequest) (contracts.Task, error) {
		return contracts.Task{}, nil
	})

	_, err = taskhttp.New(nil, taskhttp.Config{Replayer: replay})
	require.ErrorContains(t, err, "nil Ledger")
	_, err = taskhttp.New(ledger, taskhttp.Config{})
	require.ErrorContains(t, err, "Replayer is required")
	_, err = taskhttp.New(ledger, taskhttp.Config{Replayer: replay, DisconnectCheck: time.Microsecond})
	require.ErrorContains(t, err, "DisconnectCheck")
	_, err = taskhttp.New(ledger, taskhttp.Config{Replayer: replay})
	require.NoError(t, err)
	_, err = taskhttp.New(ledger, taskhttp.Config{Replayer: ledger})
	require.NoError(t, err, "the ledger itself is a Replayer")
}
