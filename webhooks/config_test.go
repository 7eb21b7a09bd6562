package webhooks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
	"github.com/flowgate/flowgate/webhooks"
)

type nopLedger struct{}

func (nopLedger) AckBriefChecked(context.Context, contracts.AckRequest, *tasks.ReplayCheck) (tasks.AckResult, error) {
	return tasks.AckResult{}, nil
}

func (nopLedger) FailChecked(context.Context, contracts.FailRequest, *tasks.ReplayCheck) (tasks.FailResult, error) {
	return tasks.FailResult{}, nil
}

var nopFollower = webhooks.FailFollowerFunc(func(context.Context, tasks.FailResult) (webhooks.FollowUp, error) {
	return webhooks.FollowUp{}, nil
})

func TestConfigPaths(t *testing.T) {
	t.Parallel()
	h, err := webhooks.New(nopLedger{}, nopFollower, webhooks.Config{})
	require.NoError(t, err)
	require.Equal(t, []string{"/ack", "/fail", "/webhook/ack", "/webhook/fail"}, h.Paths())

	h, err = webhooks.New(nopLedger{}, nopFollower, webhooks.Config{AckPath: "/vm/done", FailPath: "/vm/failed", AliasPrefix: "/hooks"})
	require.NoError(t, err)
	require.Equal(t, []string{"/vm/done", "/vm/failed", "/hooks/vm/done", "/hooks/vm/failed"}, h.Paths())

	h, err = webhooks.New(nopLedger{}, nopFollower, webhooks.Config{DisableAliases: true})
	require.NoError(t, err)
	require.Equal(t, []string{"/ack", "/fail"}, h.Paths())
}

func TestConfigRefused(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]webhooks.Config{
		"relative":            {AckPath: "ack"},
		"root":                {FailPath: "/"},
		"trailing slash":      {AckPath: "/ack/"},
		"space":               {AckPath: "/a ck"},
		"query":               {AckPath: "/ack?x=1"},
		"fragment":            {FailPath: "/fail#x"},
		"param":               {AckPath: "/:id"},
		"wildcard":            {AckPath: "/ack/*"},
		"empty segment":       {AckPath: "/a//b"},
		"dot segment":         {FailPath: "/a/../fail"},
		"control":             {AckPath: "/ack\n"},
		"too long":            {AckPath: "/" + strings.Repeat("a", 300)},
		"bad prefix":          {AliasPrefix: "webhook"},
		"same paths":          {AckPath: "/hook", FailPath: "/hook"},
		"same ignoring case":  {AckPath: "/Hook", FailPath: "/hook"},
		"ack is fail's alias": {AckPath: "/webhook/fail"},
		"negative timeout":    {FollowUpTimeout: -1},
	} {
		_, err := webhooks.New(nopLedger{}, nopFollower, cfg)
		require.Error(t, err, name)
		require.True(t, strings.HasPrefix(err.Error(), "webhooks: "), err.Error())
	}
	_, err := webhooks.New(nil, nopFollower, webhooks.Config{})
	require.ErrorContains(t, err, "nil Ledger")
	_, err = webhooks.New(nopLedger{}, nil, webhooks.Config{})
	require.ErrorContains(t, err, "nil FailFollower")

	reg := prometheus.NewRegistry()
	_, err = webhooks.New(nopLedger{}, nopFollower, webhooks.Config{Registerer: reg})
	require.NoError(t, err)
	_, err = webhooks.New(nopLedger{}, nopFollower, webhooks.Config{Registerer: reg})
	require.ErrorContains(t, err, "metrics", "registering twice on one registry is refused")
}

// A custom path is served, under its alias too, and the default paths are not.
func TestCustomPathsServed(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *webhooks.Config) { c.AckPath, c.FailPath = "/vm/ack", "/vm/fail" })
	task := b.create(t, "enc-1")
	b.claim(t, "vm-1", task.QueueID)
	before := b.snapshot(t)
	b.srv.Do("POST", "/ack", []byte(`{"queue_id":"`+task.QueueID+`"}`)).Error(t, 404, contracts.CodeNotFound)
	b.srv.Do("POST", "/webhook/ack", []byte(`{"queue_id":"`+task.QueueID+`"}`)).Error(t, 404, contracts.CodeNotFound)
	require.Equal(t, before, b.snapshot(t))
	resp, _ := b.hook(t, "/webhook/vm/fail", `{"queue_id":"`+task.QueueID+`"}`)
	require.True(t, resp.Requeued)
	b.follower.Due(t)
	b.claim(t, "vm-1", task.QueueID)
	resp, _ = b.hook(t, "/vm/ack", `{"queue_id":"`+task.QueueID+`"}`)
	require.Equal(t, contracts.StatusDone, resp.Status)
}
