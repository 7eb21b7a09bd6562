package cloud9sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// syncBuffer is an io.Writer safe to read while Main writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var servingLine = regexp.MustCompile(`serving the Cloud9 partner API at (http://\S+/GetData.ashx)`)

// waitURL waits for Main to print its URL.
func waitURL(t *testing.T, out *syncBuffer) string {
	t.Helper()
	var url string
	require.Eventually(t, func() bool {
		m := servingLine.FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 5*time.Second, 5*time.Millisecond, "output: %s", out)
	return url
}

func TestRunServesUntilCanceled(t *testing.T) {
	t.Parallel()
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- cloud9sim.Run(ctx, []string{"-addr", "127.0.0.1:0", "-scale", "60", "-write-limit", "2/min",
			"-client-id", "c15aa02a-adc1-40ae-a2b5-d2e39173ae56", "-username", "tester", "-password", "secret",
			"-gzip", "-seed", "9"}, &stdout, &stderr)
	}()
	url := waitURL(t, &stdout)
	require.Contains(t, stdout.String(), cloud9sim.Chair8GUID)
	require.Contains(t, stdout.String(), cloud9sim.DefaultOrthodontistGUID)
	require.Contains(t, stdout.String(), "write limit 2/min")

	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	post := func(body string) answer {
		resp, err := client.Post(url, "application/xml", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, []byte{0x1f, 0x8b}, raw[:2], "-gzip")
		return parseAnswer(t, gunzip(t, raw))
	}
	require.Len(t, post(requestXML("GetChairSchedules")).Records, 4)
	post(requestXML("SetPatientComment", "patGUID", "00000000-0000-0000-0000-000000000001", "patComment", "x"))
	post(requestXML("SetPatientComment", "patGUID", "00000000-0000-0000-0000-000000000001", "patComment", "x"))
	require.Equal(t, "8", post(requestXML("SetPatientComment", "patGUID", "00000000-0000-0000-0000-000000000001", "patComment", "x")).Code)
	require.Equal(t, "1", post(strings.Replace(requestXML("GetLocations"), "secret", "wrong", 1)).Code)

	// The admin endpoints drive it from outside.
	base := strings.TrimSuffix(url, "GetData.ashx")
	req, err := http.NewRequest(http.MethodPut, base+"_sim/faults", strings.NewReader(`{"error_rate":1,"procedures":["GetLocations"]}`))
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "0", post(requestXML("GetLocations")).Code)

	resp, err = client.Get(base + "_sim/state")
	require.NoError(t, err)
	var st cloud9sim.StateJSON
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	require.Equal(t, 3, st.Calls["SetPatientComment"])
	require.Equal(t, 1, st.RateLimited["SetPatientComment"])
	require.Equal(t, 1.0, st.Faults.ErrorRate)

	resp, err = client.Post(base+"_sim/reset", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Len(t, post(requestXML("GetLocations")).Records, 1, "reset clears the faults")

	cancel()
	select {
	case c := <-code:
		require.Equal(t, 0, c, "stderr: %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop")
	}
	require.Contains(t, stdout.String(), "cloud9-sim: stopped")
	_, err = client.Post(url, "application/xml", strings.NewReader(requestXML("GetLocations")))
	require.Error(t, err, "the port is closed")
}

func TestRunBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-write-limit", "5/fortnight"},
		{"-scale", "0"},
		{"-error-rate", "2"},
		{"-tz", "Mars/Olympus"},
		{"-no-such-flag"},
		{"extra"},
	} {
		var stdout, stderr syncBuffer
		require.Equal(t, 2, cloud9sim.Run(context.Background(), args, &stdout, &stderr), "%v", args)
		require.NotEmpty(t, stderr.String(), "%v", args)
	}
	var stdout, stderr syncBuffer
	require.Equal(t, 0, cloud9sim.Run(context.Background(), []string{"-h"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "-write-limit")
	require.Equal(t, 1, cloud9sim.Run(context.Background(), []string{"-addr", "256.0.0.1:0"}, &stdout, &stderr))
}

// TestMainStopsOnSIGINT is not parallel: it signals the test process, which
// Main has told os/signal to catch.
func TestMainStopsOnSIGINT(t *testing.T) {
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- cloud9sim.Main([]string{"-addr", "127.0.0.1:0", "-no-admin"}, &stdout, &stderr) }()
	url := waitURL(t, &stdout)

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Post(url, "application/xml", strings.NewReader(requestXML("GetLocations")))
	require.NoError(t, err)
	resp.Body.Close()
	resp, err = client.Get(strings.TrimSuffix(url, "GetData.ashx") + "_sim/state")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "-no-admin: /_sim/ is just another path")

	self, err := os.FindProcess(os.Getpid())
	require.NoError(t, err)
	require.NoError(t, self.Signal(os.Interrupt))
	select {
	case c := <-code:
		require.Equal(t, 0, c, "stderr: %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("Main did not stop on SIGINT")
	}
}
