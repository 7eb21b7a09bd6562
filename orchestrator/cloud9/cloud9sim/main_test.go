package cloud9sim_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/test/clocktest"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// est is the tests' zone: fixed, so no test depends on the zone database.
var est = time.FixedZone("EST", -5*3600)

// t0 is Monday 23 November 2026, 7:00 AM local: an hour before the first
// slot of the day.
var t0 = time.Date(2026, 11, 23, 7, 0, 0, 0, est)

type bundle struct {
	sim    *cloud9sim.Sim
	url    string
	clock  *clocktest.Clock
	client *http.Client
}

// setup starts a simulator on a free port with its clock at t0, the write
// limit off (tests of the limit turn it on) and seed 1.
func setup(t testing.TB, mod ...func(*cloud9sim.Config)) *bundle {
	t.Helper()
	clk := clocktest.New(t0)
	cfg := cloud9sim.Config{Now: clk.Now, TimeZone: est, Seed: 1, WriteLimit: cloud9sim.Unlimited}
	for _, m := range mod {
		m(&cfg)
	}
	sim := cloud9sim.New(cfg)
	url, stop, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, stop(ctx))
	})
	return &bundle{sim: sim, url: url, clock: clk, client: client}
}

// requestXML writes a GetDataRequest by hand; params are name, value pairs.
func requestXML(proc string, params ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>`)
	b.WriteString(`<GetDataRequest xmlns="http://schemas.practica.ws/cloud9/partners/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">`)
	b.WriteString(`<ClientID>c15aa02a-adc1-40ae-a2b5-d2e39173ae56</ClientID><UserName>tester</UserName><Password>secret</Password>`)
	fmt.Fprintf(&b, `<Procedure>%s</Procedure><Parameters>`, proc)
	for i := 0; i+1 < len(params); i += 2 {
		fmt.Fprintf(&b, "<%s>", params[i])
		_ = xml.EscapeText(&b, []byte(params[i+1]))
		fmt.Fprintf(&b, "</%s>", params[i])
	}
	b.WriteString(`</Parameters></GetDataRequest>`)
	return b.String()
}

// answer is a decoded GetDataResponse.
type answer struct {
	Status  string
	Code    string
	Message string
	Records []map[string]string
}

// result is the Result of a one-record write answer.
func (a answer) result(t testing.TB) string {
	t.Helper()
	require.Equal(t, "Success", a.Status, "answer: %+v", a)
	require.Len(t, a.Records, 1)
	return a.Records[0]["Result"]
}

// requireError asserts an Error answer with code and message.
func (a answer) requireError(t testing.TB, code int, msg string) {
	t.Helper()
	require.Equal(t, "Error", a.Status, "answer: %+v", a)
	require.Equal(t, fmt.Sprint(code), a.Code)
	require.Equal(t, msg, a.Message)
}

// post sends a body and answers the raw HTTP response with its body read.
func (b *bundle) post(t testing.TB, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := b.client.Post(b.url, "application/xml", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}

// call posts a hand-written request and decodes the answer.
func (b *bundle) call(t testing.TB, proc string, params ...string) answer {
	t.Helper()
	resp, raw := b.post(t, requestXML(proc, params...))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	return parseAnswer(t, raw)
}

// parseAnswer decodes an answer with the token stream, independently of
// the simulator's encoder.
func parseAnswer(t testing.TB, raw []byte) answer {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(raw))
	var (
		a    answer
		path []string
		cur  map[string]string
		text strings.Builder
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "answer: %s", raw)
		switch tk := tok.(type) {
		case xml.StartElement:
			if len(path) == 0 {
				require.Equal(t, "GetDataResponse", tk.Name.Local)
				require.Equal(t, cloud9sim.Namespace, tk.Name.Space)
			}
			path = append(path, tk.Name.Local)
			text.Reset()
			if len(path) == 3 && tk.Name.Local == "Record" {
				cur = map[string]string{}
			}
		case xml.CharData:
			text.Write(tk)
		case xml.EndElement:
			name := path[len(path)-1]
			switch {
			case len(path) == 2 && name == "ResponseStatus":
				a.Status = text.String()
			case len(path) == 2 && name == "ErrorCode":
				a.Code = text.String()
			case len(path) == 2 && name == "ErrorMessage":
				a.Message = text.String()
			case len(path) == 3 && name == "Record":
				a.Records = append(a.Records, cur)
			case len(path) == 4 && path[2] == "Record":
				cur[name] = text.String()
			}
			path = path[:len(path)-1]
		}
	}
	return a
}

// createPatient adds a patient and answers its GUID.
func (b *bundle) createPatient(t testing.TB, first, last string) string {
	t.Helper()
	res := b.call(t, "SetPatient", "patientFirstName", first, "patientLastName", last,
		"providerGUID", cloud9sim.DefaultOrthodontistGUID, "locationGUID", cloud9sim.DefaultLocationGUID,
		"VendorUserName", "flowgate").result(t)
	guid, ok := strings.CutPrefix(res, "Patient Added: ")
	require.True(t, ok, "result %q", res)
	return guid
}

// book sends SetAppointment for a New Patient Consult of 45 minutes.
func (b *bundle) book(t testing.TB, patient, start, column string) answer {
	t.Helper()
	return b.call(t, "SetAppointment", "PatientGUID", patient, "StartTime", start,
		"ScheduleViewGUID", cloud9sim.DefaultScheduleViewGUID, "ScheduleColumnGUID", column,
		"AppointmentTypeGUID", cloud9sim.DefaultAppointmentTypeGUID, "Minutes", "45",
		"VendorUserName", "flowgate")
}

// bookOK books and answers the new appointment's GUID.
func (b *bundle) bookOK(t testing.TB, patient, start, column string) string {
	t.Helper()
	res := b.book(t, patient, start, column).result(t)
	guid, ok := strings.CutPrefix(res, "Appointment GUID Added: ")
	require.True(t, ok, "result %q", res)
	return guid
}

// slots answers GetOnlineReservations between two dates with extra params.
func (b *bundle) slots(t testing.TB, from, to string, extra ...string) []map[string]string {
	t.Helper()
	a := b.call(t, "GetOnlineReservations", append([]string{"startDate", from, "endDate", to}, extra...)...)
	require.Equal(t, "Success", a.Status, "answer: %+v", a)
	return a.Records
}

// hasSlot reports whether records hold start in column.
func hasSlot(records []map[string]string, start, column string) bool {
	for _, r := range records {
		if r["StartTime"] == start && r["ScheduleColumnGUID"] == column {
			return true
		}
	}
	return false
}

func gunzip(t testing.TB, raw []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	return plain
}
