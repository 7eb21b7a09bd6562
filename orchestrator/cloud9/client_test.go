package cloud9_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	ok := cloud9.Config{Endpoint: "https://us-ea1-partnertest.cloud9ortho.com/GetData.ashx", ClientID: "c", Username: "u", Password: "p"}
	c, err := cloud9.New(ok)
	require.NoError(t, err)
	c.Close()
	require.Equal(t, 45*time.Second, c.Timeout("SetAppointment"))
	require.Equal(t, 45*time.Second, c.Timeout("SetPatient"))
	require.Equal(t, 45*time.Second, c.Timeout("SetAppointmentStatusCanceled"))
	require.Equal(t, 15*time.Second, c.Timeout("SetPatientComment"))
	require.Equal(t, 60*time.Second, c.Timeout("GetOnlineReservations"))

	for name, mod := range map[string]func(*cloud9.Config){
		"no endpoint":      func(c *cloud9.Config) { c.Endpoint = "" },
		"relative":         func(c *cloud9.Config) { c.Endpoint = "/GetData.ashx" },
		"ftp":              func(c *cloud9.Config) { c.Endpoint = "ftp://x/GetData.ashx" },
		"user in url":      func(c *cloud9.Config) { c.Endpoint = "https://u:p@x/GetData.ashx" },
		"no client":        func(c *cloud9.Config) { c.ClientID = "" },
		"no user":          func(c *cloud9.Config) { c.Username = " " },
		"no password":      func(c *cloud9.Config) { c.Password = "" },
		"long vendor":      func(c *cloud9.Config) { c.VendorUsername = strings.Repeat("v", 26) },
		"negative timeout": func(c *cloud9.Config) { c.NoteTimeout = -time.Second },
		"day half format":  func(c *cloud9.Config) { c.DayHalfFormat = "yes" },
	} {
		cfg := ok
		mod(&cfg)
		_, err := cloud9.New(cfg)
		require.Error(t, err, name)
		require.NotContains(t, err.Error(), "p@", name)
	}
}

func TestCallSuccessGzipLabelledHTML(t *testing.T) {
	t.Parallel()
	body := gzipped(t, answer(t, result("Patient Added: "+patientGUID)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, http.MethodPost, r.Method)
		require.Contains(t, r.Header.Get("Content-Type"), "application/xml")
		w.Header().Set("Content-Type", "text/html") // as the real API labels it; no Content-Encoding
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	r, err := c.Call(context.Background(), "SetPatient", cloud9.P("patientFirstName", "Ann"))
	require.NoError(t, err)
	require.Equal(t, "Patient Added: "+patientGUID, r.Result())

	// The same body announced with Content-Encoding is decoded too.
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(body)
	}))
	defer srv2.Close()
	r, err = newClient(t, srv2.URL).Call(context.Background(), "SetPatient")
	require.NoError(t, err)
	require.Equal(t, "Patient Added: "+patientGUID, r.Result())
}

func TestCallStatusAndResultErrors(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	next := failure(8, "Too many requests within the timeframe for procedure SetAppointment")
	srv := newServer(t, func(*cloud9.Request) []byte {
		mu.Lock()
		defer mu.Unlock()
		return answer(t, next)
	})
	reg := prometheus.NewRegistry()
	c := newClient(t, srv.URL, func(c *cloud9.Config) { c.Registerer = reg })
	set := func(r *cloud9.Response) {
		mu.Lock()
		next = r
		mu.Unlock()
	}
	ctx := context.Background()

	r, err := c.Call(ctx, "SetAppointment")
	require.Nil(t, r)
	var e *cloud9.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, cloud9.KindStatus, e.Kind)
	require.Equal(t, cloud9.ClassRateLimit, e.Class)
	require.Equal(t, 8, e.Code)
	require.False(t, e.Uncertain, "Cloud9 refused: nothing was committed")
	require.True(t, e.Retryable())
	require.Equal(t, "Error", e.Response.Status)
	require.Equal(t, 1.0, metricValue(t, reg, "flowgate_cloud9_rate_limited_total", map[string]string{"procedure": "SetAppointment"}))

	set(failure(0, "An unknown error occurred."))
	_, err = c.Call(ctx, "SetAppointment")
	require.ErrorAs(t, err, &e)
	require.True(t, e.Uncertain, "code 0 may have acted")
	require.False(t, e.Retryable())

	set(result("Error: This appointment cannot be scheduled in the specified time slot."))
	_, err = c.Call(ctx, "SetAppointment")
	require.ErrorAs(t, err, &e)
	require.Equal(t, cloud9.KindResult, e.Kind, "a Result beginning Error: under Success is a failure")
	require.Equal(t, cloud9.ClassSlotNotAvailable, e.Class)
	require.Equal(t, "Error: This appointment cannot be scheduled in the specified time slot.", e.Message)
	require.False(t, e.Uncertain)
	require.False(t, e.Retryable())

	set(result("error:patient guid does not exist"))
	_, err = c.Call(ctx, "SetAppointment")
	require.ErrorAs(t, err, &e)
	require.Equal(t, cloud9.ClassPatientNotFound, e.Class)

	set(result("Errors are not this: Appointment GUID Added: " + apptGUID))
	_, err = c.Call(ctx, "SetAppointment")
	require.NoError(t, err, "only a Result that begins with the word Error is a failure")

	set(&cloud9.Response{Status: "Pending", ErrorCode: -1})
	_, err = c.Call(ctx, "SetAppointment")
	require.ErrorAs(t, err, &e)
	require.Equal(t, cloud9.KindStatus, e.Kind)
	require.True(t, e.Uncertain, "an unknown status says nothing")

	require.Equal(t, 1.0, metricValue(t, reg, "flowgate_cloud9_requests_total", map[string]string{"procedure": "SetAppointment", "outcome": "ok"}))
	require.Equal(t, 3.0, metricValue(t, reg, "flowgate_cloud9_requests_total", map[string]string{"procedure": "SetAppointment", "outcome": "status_error"}))
	require.Equal(t, 2.0, metricValue(t, reg, "flowgate_cloud9_requests_total", map[string]string{"procedure": "SetAppointment", "outcome": "result_error"}))
	require.Equal(t, 6.0, metricValue(t, reg, "flowgate_cloud9_request_duration_seconds", map[string]string{"procedure": "SetAppointment"}))
	require.Equal(t, 1.0, metricValue(t, reg, "flowgate_cloud9_rate_limited_total", map[string]string{"procedure": "SetAppointment"}))
}

func TestMetricsSharedRegistry(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	srv := newServer(t, func(*cloud9.Request) []byte { return answer(t, success()) })
	a := newClient(t, srv.URL, func(c *cloud9.Config) { c.Registerer = reg })
	b := newClient(t, srv.URL, func(c *cloud9.Config) { c.Registerer = reg })
	_, err := a.Call(context.Background(), "GetLocations")
	require.NoError(t, err)
	_, err = b.Call(context.Background(), "GetLocations")
	require.NoError(t, err)
	require.Equal(t, 2.0, metricValue(t, reg, "flowgate_cloud9_requests_total", map[string]string{"procedure": "GetLocations", "outcome": "ok"}))
}

// hijack answers nothing: it reads the request, then closes the connection
// (reset sends a TCP RST instead of a FIN).
func hijack(t testing.TB, reset bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTransportUncertainty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("closed after the body was read", func(t *testing.T) {
		t.Parallel()
		var e *cloud9.Error
		c := newClient(t, hijack(t, false).URL)
		_, _, err := c.SetAppointment(ctx, validAppointment())
		require.ErrorAs(t, err, &e)
		require.Equal(t, cloud9.KindTransport, e.Kind)
		require.True(t, e.Uncertain, "the request reached the server: it may have committed")
		require.True(t, e.Retryable())
		require.True(t, cloud9.IsUncertain(err))
	})
	t.Run("reset after the body was read", func(t *testing.T) {
		t.Parallel()
		var e *cloud9.Error
		c := newClient(t, hijack(t, true).URL)
		_, _, err := c.SetAppointment(ctx, validAppointment())
		require.ErrorAs(t, err, &e)
		require.True(t, e.Uncertain)
		t.Log(e)
		if strings.Contains(e.Message, "reset") {
			require.Equal(t, cloud9.ClassTimeout, e.Class, "the seed classes ECONNRESET as a timeout")
		}
	})
	t.Run("dial refused", func(t *testing.T) {
		t.Parallel()
		var e *cloud9.Error
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		c := newClient(t, "http://"+addr+"/GetData.ashx")
		_, _, err = c.SetAppointment(ctx, validAppointment())
		require.ErrorAs(t, err, &e)
		require.Equal(t, cloud9.KindTransport, e.Kind)
		require.False(t, e.Uncertain, "nothing was sent")
		require.True(t, e.Retryable())
		require.Contains(t, e.Message, "refused")
	})
	t.Run("timeout after the body was sent", func(t *testing.T) {
		t.Parallel()
		var e *cloud9.Error
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer srv.Close()
		defer close(release)
		reg := prometheus.NewRegistry()
		c := newClient(t, srv.URL, func(c *cloud9.Config) { c.WriteTimeout = 150 * time.Millisecond; c.Registerer = reg })
		began := time.Now()
		_, _, err := c.SetAppointment(ctx, validAppointment())
		require.Less(t, time.Since(began), 2*time.Second)
		require.ErrorAs(t, err, &e)
		require.Equal(t, cloud9.KindTransport, e.Kind)
		require.Equal(t, cloud9.ClassTimeout, e.Class)
		require.True(t, e.Uncertain)
		require.True(t, e.Retryable())
		require.True(t, errors.Is(err, context.DeadlineExceeded))
		require.Equal(t, 1.0, metricValue(t, reg, "flowgate_cloud9_requests_total", map[string]string{"procedure": "SetAppointment", "outcome": "timeout"}))
	})
	t.Run("broken answer", func(t *testing.T) {
		t.Parallel()
		var e *cloud9.Error
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			_, _ = w.Write([]byte("<GetDataResponse><ResponseStatus>Succ"))
		}))
		defer srv.Close()
		_, _, err := newClient(t, srv.URL).SetAppointment(ctx, validAppointment())
		require.ErrorAs(t, err, &e)
		require.Equal(t, cloud9.KindTransport, e.Kind)
		require.True(t, e.Uncertain)
	})
	t.Run("http status without envelope", func(t *testing.T) {
		t.Parallel()
		var e *cloud9.Error
		for status, want := range map[int]struct {
			class     cloud9.Class
			uncertain bool
		}{
			http.StatusServiceUnavailable: {cloud9.ClassCloud9, true},
			http.StatusGatewayTimeout:     {cloud9.ClassTimeout, true},
			http.StatusTooManyRequests:    {cloud9.ClassRateLimit, false},
			http.StatusUnauthorized:       {cloud9.ClassAuthorization, false},
			http.StatusOK:                 {cloud9.ClassUnknown, true},
		} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(status)
				_, _ = w.Write([]byte("<html>proxy says no</html>"))
			}))
			_, _, err := newClient(t, srv.URL).SetAppointment(ctx, validAppointment())
			srv.Close()
			require.ErrorAs(t, err, &e, "%d", status)
			require.Equal(t, cloud9.KindTransport, e.Kind, "%d", status)
			require.Equal(t, want.class, e.Class, "%d", status)
			require.Equal(t, want.uncertain, e.Uncertain, "%d", status)
			require.ErrorIs(t, err, cloud9.ErrMalformed)
			require.False(t, e.Unreached(), "%d: an HTTP answer reached something", status)
		}
	})
	t.Run("empty answer", func(t *testing.T) {
		t.Parallel()
		var e *cloud9.Error
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		defer srv.Close()
		_, _, err := newClient(t, srv.URL).SetAppointment(ctx, validAppointment())
		require.ErrorAs(t, err, &e)
		require.Equal(t, "empty answer", e.Message)
		require.True(t, e.Uncertain)
		require.True(t, e.Retryable())
	})
}

func TestTimeoutsByProcedureKind(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	left := map[string]time.Duration{}
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		dl, ok := r.Context().Deadline()
		require.True(t, ok, "every call has a deadline")
		body, _ := io.ReadAll(r.Body)
		req, err := cloud9.DecodeRequest(body)
		require.NoError(t, err)
		mu.Lock()
		left[req.Procedure] = time.Until(dl)
		mu.Unlock()
		return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(answer(t, success()))), Request: r}, nil
	})}
	c := newClient(t, "http://cloud9.invalid/GetData.ashx", func(c *cloud9.Config) { c.HTTPClient = hc })
	ctx := context.Background()
	for _, p := range []string{"SetAppointment", "SetPatient", "SetPatientComment", "SetAppointmentStatusConfirmed", "GetOnlineReservations", "GetLocations"} {
		_, err := c.Call(ctx, p)
		require.NoError(t, err)
	}
	for p, want := range map[string]time.Duration{"SetAppointment": 45 * time.Second, "SetPatient": 45 * time.Second,
		"SetPatientComment": 15 * time.Second, "SetAppointmentStatusConfirmed": 45 * time.Second,
		"GetOnlineReservations": 60 * time.Second, "GetLocations": 60 * time.Second} {
		require.InDelta(t, want.Seconds(), left[p].Seconds(), 1, p)
	}

	// Settings replace the seed's values; a shorter caller deadline wins.
	c = newClient(t, "http://cloud9.invalid/GetData.ashx", func(c *cloud9.Config) {
		c.HTTPClient = hc
		c.WriteTimeout, c.NoteTimeout, c.ReadTimeout = 3*time.Second, 2*time.Second, 4*time.Second
	})
	for _, p := range []string{"SetAppointment", "SetPatientComment", "GetLocations"} {
		_, err := c.Call(ctx, p)
		require.NoError(t, err)
	}
	require.InDelta(t, 3, left["SetAppointment"].Seconds(), 0.5)
	require.InDelta(t, 2, left["SetPatientComment"].Seconds(), 0.5)
	require.InDelta(t, 4, left["GetLocations"].Seconds(), 0.5)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := c.Call(short, "GetLocations")
	require.NoError(t, err)
	require.InDelta(t, 1, left["GetLocations"].Seconds(), 0.5)
}

func TestPasswordNeverLogged(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	require.True(t, logger.Enabled(context.Background(), slog.LevelDebug), "failures are logged at debug")
	answers := []*cloud9.Response{success(), failure(8, "Too many requests"), result("Error: Minutes must be greater than 0."), failure(1, "Invalid client / username / password combination.")}
	var i int
	srv := newServer(t, func(*cloud9.Request) []byte {
		mu.Lock()
		defer mu.Unlock()
		a := answers[i%len(answers)]
		i++
		return answer(t, a)
	})
	c := newClient(t, srv.URL, func(c *cloud9.Config) { c.Logger = logger })
	var errs []string
	for range answers {
		_, err := c.Call(context.Background(), "SetAppointment", cloud9.P("PatientGUID", patientGUID))
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	_, err := newClient(t, hijack(t, false).URL, func(c *cloud9.Config) { c.Logger = logger }).Call(context.Background(), "GetLocations")
	require.Error(t, err)
	errs = append(errs, err.Error())
	logger.Info("config", "cloud9", cloud9.Config{Endpoint: srv.URL, Password: testPassword})
	logger.Info("request", "req", cloud9.Request{Procedure: "SetPatient", Password: testPassword})
	logger.Info(fmt.Sprintf("%v %+v %#v", cloud9.Config{Password: testPassword}, cloud9.Request{Password: testPassword}, &cloud9.Config{Password: testPassword}))

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, logs.String())
	require.NotContains(t, logs.String(), "p&ss")
	require.NotContains(t, logs.String(), "s3cret")
	for _, e := range errs {
		require.NotContains(t, e, "s3cret")
	}
	require.Equal(t, testPassword, srv.requests()[0].Password, "the envelope carries it")
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestCallerCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := c.Call(ctx, "SetAppointment")
	var e *cloud9.Error
	require.ErrorAs(t, err, &e)
	require.True(t, errors.Is(err, context.Canceled))
	require.True(t, e.Uncertain)
}

func TestCallInvalidRequestCostsNoToken(t *testing.T) {
	t.Parallel()
	lim := &script{}
	srv := newServer(t, func(*cloud9.Request) []byte { return answer(t, success()) })
	c := newClient(t, srv.URL, func(c *cloud9.Config) { c.Limiter = lim })
	for _, call := range []func() error{
		func() error {
			_, err := c.Call(context.Background(), "SetAppointment", cloud9.P("not a name", "x"))
			return err
		},
		func() error { _, err := c.Call(context.Background(), ""); return err },
	} {
		require.ErrorIs(t, call(), cloud9.ErrInvalidInput)
	}
	require.Zero(t, lim.count())
	require.Empty(t, srv.requests())
}

func TestWithoutLimiter(t *testing.T) {
	t.Parallel()
	lim := &script{answers: []time.Duration{time.Minute, time.Minute}}
	reg := prometheus.NewRegistry()
	srv := newServer(t, func(*cloud9.Request) []byte { return answer(t, result("Appointment GUID Added: "+apptGUID)) })
	c := newClient(t, srv.URL, func(c *cloud9.Config) { c.Limiter = lim; c.Registerer = reg })
	_, _, err := c.SetAppointment(context.Background(), validAppointment())
	require.Equal(t, time.Minute, cloud9.RetryAfter(err))

	free := c.WithoutLimiter()
	_, _, err = free.SetAppointment(context.Background(), validAppointment())
	require.NoError(t, err, "the caller took the limiter's turn itself")
	require.Equal(t, 1, lim.count())
	require.Len(t, srv.requests(), 1)
	require.Equal(t, 1.0, metricValue(t, reg, "flowgate_cloud9_requests_total", map[string]string{"procedure": "SetAppointment", "outcome": "ok"}), "same metrics")
	free.Close()
	_, _, err = c.SetAppointment(context.Background(), validAppointment())
	require.Equal(t, time.Minute, cloud9.RetryAfter(err), "the original still asks")
}
