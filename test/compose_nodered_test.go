package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// TestComposeNodeRedImportsKit: the node-red service mounts flows/node-red
// and its entrypoint imports the kit before the image's own entrypoint. The
// import command itself is run here, against a temporary /data, exactly as
// the entrypoint spells it (only the mount paths replaced): a fresh volume
// gets every kit node, a second start leaves the file as it is.
func TestComposeNodeRedImportsKit(t *testing.T) {
	raw, err := os.ReadFile(composeFile)
	require.NoError(t, err)
	var p struct {
		Services map[string]struct {
			Entrypoint  []string `yaml:"entrypoint"`
			Environment any      `yaml:"environment"`
			Volumes     []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &p))
	svc, ok := p.Services["node-red"]
	require.True(t, ok, "no node-red service")

	var kitMount string
	for _, v := range svc.Volumes {
		src, rest, _ := strings.Cut(v, ":")
		if filepath.Clean(src) == "flows/node-red" {
			dst, mode, _ := strings.Cut(rest, ":")
			require.Equal(t, "ro", mode, "the kit is mounted read-only")
			kitMount = dst
		}
	}
	require.NotEmpty(t, kitMount, "node-red does not mount ./flows/node-red: %v", svc.Volumes)

	require.Len(t, svc.Entrypoint, 3, "entrypoint: [sh, -c, <import && exec ./entrypoint.sh>]")
	require.Equal(t, []string{"sh", "-c"}, svc.Entrypoint[:2])
	importCmd, start, ok := strings.Cut(svc.Entrypoint[2], " && ")
	require.True(t, ok, svc.Entrypoint[2])
	require.Equal(t, "exec ./entrypoint.sh", start, "the image's own entrypoint starts Node-RED")
	require.Equal(t, "node "+kitMount+"/import.js --if-absent /data/flows.json", importCmd)

	env := composeEnv(t, svc.Environment)
	for k, want := range map[string]string{"FLOWGATE_URL": "http://flowgate:8080", "FLOWGATE_ROUTE_DEFAULT": "flowgate",
		"FLOWGATE_BASE_PATH": bookingBase, "HMAC_SECRET": "${HMAC_SECRET:?set HMAC_SECRET}",
		// the dashboard's queue-status poll: the whole queue is the monitoring credentials' only
		"FLOWGATE_MONITORING_USER": "${MONITORING_USER:-admin}", "FLOWGATE_MONITORING_PASSWORD": "${MONITORING_PASSWORD:?set MONITORING_PASSWORD}"} {
		require.NotNil(t, env[k], "node-red lacks %s", k)
		require.Equal(t, want, *env[k], k)
	}
	for _, k := range []string{"FLOWGATE_TOKEN", "FLOWGATE_ADMIN_TOKEN"} {
		v, ok := env[k]
		require.True(t, ok && v == nil, "%s is passed through from the host, without a value", k)
	}

	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the entrypoint's import command is not run")
	}
	kit, err := filepath.Abs("../flows/node-red")
	require.NoError(t, err)
	data := t.TempDir()
	cmd := strings.NewReplacer(kitMount+"/", kit+"/", "/data/", data+"/").Replace(importCmd)
	run := func() string {
		out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
		require.NoError(t, err, "%s\n%s", cmd, out)
		return string(out)
	}
	run()
	var want []string
	for _, f := range []string{"flowgate-proxy.json", "flowgate-queue-dashboard.json"} {
		want = append(want, nodeIDs(t, filepath.Join(kit, f))...)
	}
	got := nodeIDs(t, filepath.Join(data, "flows.json"))
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, want, got, "a fresh /data gets exactly the kit")
	before, err := os.ReadFile(filepath.Join(data, "flows.json"))
	require.NoError(t, err)
	require.Contains(t, run(), "already holds the flowgate kit")
	after, err := os.ReadFile(filepath.Join(data, "flows.json"))
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "a restart leaves the flows as they are")
}

func nodeIDs(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var nodes []struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(raw, &nodes), file)
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		ids = append(ids, n.ID)
	}
	return ids
}
