package cloud9_test

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts/contractstest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testPassword = "s3cret-p&ss<word>"
	patientGUID  = "877F0034-7E09-4E35-BE0D-397E309DF2E8"
	viewGUID     = "4c9e9333-4951-4eb0-8d97-e1ad83ef422d"
	columnGUID   = "07687884-7e37-49aa-8028-d43b751c9034"
	typeGUID     = "f6c20c35-9abb-47c2-981a-342996016705"
	apptGUID     = "b56a84a9-21c1-49bb-9a3e-aae093014dae"
)

// server is a Cloud9 stand-in written for these tests: it decodes each
// request and answers with what answer returns, labelled text/html as the
// real API does.
type server struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []*cloud9.Request
	times []time.Time
}

func newServer(t testing.TB, answer func(r *cloud9.Request) []byte) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		req, err := cloud9.DecodeRequest(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.times = append(s.times, time.Now())
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(answer(req))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() []*cloud9.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*cloud9.Request(nil), s.reqs...)
}

func (s *server) arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

// newClient is a client of endpoint with the test credentials.
func newClient(t testing.TB, endpoint string, mod ...func(*cloud9.Config)) *cloud9.Client {
	t.Helper()
	cfg := cloud9.Config{Endpoint: endpoint, ClientID: "c1d2e3f4-0000-4000-8000-000000000001",
		Username: "flowgate", Password: testPassword, VendorUsername: "flowgate-iva",
		Logger: slog.New(slog.DiscardHandler)}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := cloud9.New(cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// answer renders a response.
func answer(t testing.TB, r *cloud9.Response) []byte {
	t.Helper()
	b, err := cloud9.EncodeResponse(r)
	require.NoError(t, err)
	return b
}

func success(records ...cloud9.Record) *cloud9.Response {
	return &cloud9.Response{Status: cloud9.StatusSuccess, ErrorCode: -1, Records: records}
}

func result(text string) *cloud9.Response {
	return success(cloud9.Record{{Name: "Result", Value: text}})
}

func failure(code int, msg string) *cloud9.Response {
	return &cloud9.Response{Status: cloud9.StatusError, ErrorCode: code, ErrorMessage: msg}
}

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// recorder is a transport that keeps every request body and answers with
// answer, without a network.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	answer func(r *cloud9.Request) []byte
}

func (rec *recorder) client() *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, body)
		rec.mu.Unlock()
		req, err := cloud9.DecodeRequest(body)
		if err != nil {
			return nil, err
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/html"}},
			Body: io.NopCloser(bytes.NewReader(rec.answer(req))), Request: r}, nil
	})}
}

func (rec *recorder) last(t testing.TB) []byte {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.NotEmpty(t, rec.bodies, "no request was sent")
	return rec.bodies[len(rec.bodies)-1]
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.bodies)
}

// goldenXML compares raw bytes with contracts/testdata/<name>.golden; the
// contracts' -update flag and UPDATE_GOLDEN=1 rewrite it.
func goldenXML(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join(contractstest.Dir(), name+".golden")
	if f := flag.Lookup("update"); (f != nil && f.Value.String() == "true") || os.Getenv("UPDATE_GOLDEN") == "1" {
		require.NoError(t, os.WriteFile(path, append(bytes.TrimSpace(got), '\n'), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create %s", path)
	require.Equal(t, string(bytes.TrimSpace(want)), string(bytes.TrimSpace(got)), "golden %s", name)
}

// metricValue is the value of the series name{labels} in reg, 0 if absent.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matchLabels(m, labels) {
				switch {
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				case m.Histogram != nil:
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return 0
}

func matchLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}
