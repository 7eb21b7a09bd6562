package bookinghttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/booking/bookinghttp"
	bt "github.com/flowgate/flowgate/orchestrator/booking/bookingtest"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// fasthttp keeps one process-wide goroutine updating its Date header, and
// asynq's client closes its pools asynchronously.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}

const base = "/chord/ortho-prd"

var ctx = context.Background()

// server is the app shell (web.New, as the sidecar builds it) with the
// booking routes on svc.
type server struct {
	app *fiber.App
}

func newServer(t *testing.T, svc bookinghttp.Service, basePath string) *server {
	t.Helper()
	return newServerWith(t, svc, basePath, bookinghttp.Config{Logger: bt.Discard()})
}

// newServerWith is newServer with cfg.
func newServerWith(t *testing.T, svc bookinghttp.Service, basePath string, cfg bookinghttp.Config) *server {
	t.Helper()
	app, err := web.New(web.Options{Logger: bt.Discard()})
	require.NoError(t, err)
	h, err := bookinghttp.New(svc, cfg)
	require.NoError(t, err)
	require.NoError(t, bookinghttp.Register(app, h, basePath))
	return &server{app: app}
}

type reply struct {
	status int
	body   []byte
}

func (s *server) do(t *testing.T, method, path string, body []byte) reply {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.app.Test(req, -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, body: b}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

const start = "01/21/2026 10:00 AM"

func appt(e *bt.Env) contracts.CreateApptRequest {
	return contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: e.Token(bt.Patient), StartTime: start,
		ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column, AppointmentTypeGUID: bt.Type, Minutes: 45,
		ChildName: "Johnny Smith", Note: "Child: Johnny Smith | DOB: 01/15/2015 | Insurance: Aetna",
		UUI: "call-session-123", SessionID: "flowise-session-456"}
}

func parent() contracts.CreatePatientRequest {
	return contracts.CreatePatientRequest{PatientFirstName: "Mary", PatientLastName: "Smith", PhoneNumber: "412-555-0100",
		UUI: "call-session-123", SessionID: "flowise-session-456"}
}

// queueWithNames makes the fake queue answer one page of operations with
// the seed's names (the service must hide them from an anonymous caller).
func queueWithNames(e *bt.Env) {
	next, at, lastErr := "2", "2026-01-20T15:35:00.000Z", "Rate limited"
	e.Queue.StatusResp = contracts.QueueStatusResponse{Total: 3, Pending: 1, Completed: 1, Failed: 1,
		Operations: []contracts.QueueOperation{{ID: "op-1705764600000-abc123", Status: contracts.OpPending, Attempts: 3,
			MaxAttempts: 10, CreatedAt: "2026-01-20T15:31:00.000Z", NextRetryAt: &at, LastError: &lastErr,
			ChildName: "Johnny Smith", StartTime: "01/20/2026 10:00 AM", OperationType: contracts.OpSetAppointment}},
		Page: 1, PageSize: 2, TotalPages: 2, NextCursor: &next, StorageType: contracts.QueueStorageType, Scope: contracts.QueueScopeAll}
}

func slot(startTime, endTime string) contracts.ApptSlot {
	return contracts.ApptSlot{StartTime: startTime, EndTime: endTime, ScheduleViewGUID: bt.View, ScheduleViewDescription: "Main",
		ScheduleColumnGUID: bt.Column, ScheduleColumnDescription: "Chair 3", AppointmentTypeGUID: bt.Type,
		AppointmentTypeDescription: "New patient consult", Minutes: "40", LocationGUID: booking.DefaultLocationGUID}
}

// Every answer of every endpoint, served over HTTP and pinned by
// contracts/testdata/booking_http_<name>.golden.
func TestGoldens(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t)
		})
	}
}

// goldenCase is one request of TestGoldens and the answer pinned by
// contracts/testdata/booking_http_<name>.golden.
type goldenCase struct {
	name   string
	setup  func(e *bt.Env)
	method string // default POST
	path   string
	body   func(e *bt.Env) []byte
	status int    // default 200
	model  string // BOOKING_PATIENT_MODEL; default parent
	// operator: the request carries the operator's credentials
	// (Config.Operator says yes).
	operator bool
}

// goldenCases is TestGoldens' table: every answer of every endpoint.
func goldenCases() []goldenCase {
	post := func(v func(e *bt.Env) any) func(e *bt.Env) []byte {
		return func(e *bt.Env) []byte { b, _ := json.Marshal(v(e)); return b }
	}
	apptWith := func(f func(*contracts.CreateApptRequest, *bt.Env)) func(e *bt.Env) []byte {
		return post(func(e *bt.Env) any { r := appt(e); f(&r, e); return r })
	}
	// withJSON is v with fields set as raw JSON values (a number where the
	// contract has text: what the IVA may send).
	withJSON := func(v func(*bt.Env) any, set map[string]any) func(e *bt.Env) []byte {
		return func(e *bt.Env) []byte {
			b, _ := json.Marshal(v(e))
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			for k, x := range set {
				m[k] = x
			}
			b, _ = json.Marshal(m)
			return b
		}
	}
	cases := []goldenCase{
		// The original took numbers for the IVA's text fields (issue: dead
		// air on wrong types): created, phoneNumber and uui as their text.
		{name: "create_patient_numeric_phone", path: "/createPatient", body: withJSON(func(*bt.Env) any { return parent() },
			map[string]any{"phoneNumber": 4125550100, "uui": 98765, "gender": 1})},
		{name: "create_patient_parent", path: "/createPatient", body: post(func(*bt.Env) any { return parent() })},
		{name: "create_patient_cached", path: "/createPatient", body: post(func(*bt.Env) any { return parent() }),
			setup: func(e *bt.Env) {
				tok, _ := e.Tokens.Issue("call-session-123", bt.Patient)
				_ = e.Sessions.Put(ctx, booking.Session{PatientGUID: bt.Patient, FamilyID: "fam-1", BookingAuthToken: tok,
					PatientName: "Mary Smith", UUI: "call-session-123", ExpiresAt: bt.T0.Add(15 * 60e9)})
			}},
		{name: "create_patient_child", path: "/createPatient", body: post(func(*bt.Env) any {
			return contracts.CreatePatientRequest{PatientFirstName: "Johnny", PatientLastName: "Smith", IsChild: true,
				ParentPatientGUID: bt.Patient, FamilyID: "fam-1", BirthDate: "01/15/2015"}
		})},
		{name: "create_patient_parent_individual", path: "/createPatient", body: post(func(*bt.Env) any { return parent() }),
			model: booking.PatientModelIndividual},
		{name: "create_patient_child_individual", path: "/createPatient", body: post(func(*bt.Env) any {
			return contracts.CreatePatientRequest{PatientFirstName: "Johnny", PatientLastName: "Smith", IsChild: true,
				ParentPatientGUID: bt.Patient, FamilyID: "fam-1", BirthDate: "01/15/2015"}
		}), model: booking.PatientModelIndividual},
		{name: "create_patient_queued", path: "/createPatient", body: post(func(*bt.Env) any { return parent() }),
			setup: func(e *bt.Env) {
				e.Cloud9.Script(cloud9.ProcSetPatient, bt.RateLimited(), bt.RateLimited(), bt.RateLimited())
			}},
		{name: "create_patient_failed", path: "/createPatient", body: post(func(*bt.Env) any { return parent() }), status: 500,
			setup: func(e *bt.Env) {
				e.Cloud9.Script(cloud9.ProcSetPatient, bt.StatusError(cloud9.ProcSetPatient, 16, "Procedure validation failure"))
			}},
		{name: "create_patient_validation", path: "/createPatient", body: post(func(*bt.Env) any {
			return contracts.CreatePatientRequest{PatientLastName: "Smith"}
		})},
		{name: "create_patient_malformed", path: "/createPatient", body: func(*bt.Env) []byte { return []byte(`{"patientFirstName":`) }},

		{name: "create_appt_booked", path: "/createAppt", body: apptWith(func(*contracts.CreateApptRequest, *bt.Env) {})},
		{name: "create_appt_numeric_uui", path: "/createAppt", body: withJSON(func(e *bt.Env) any { return appt(e) },
			map[string]any{"uui": 98765, "sessionId": 12345})},
		{name: "create_appt_booked_note_failed", path: "/createAppt", body: apptWith(func(*contracts.CreateApptRequest, *bt.Env) {}),
			setup: func(e *bt.Env) { e.Cloud9.Script(cloud9.ProcSetPatientComment, bt.PatientMissing()) }},
		{name: "create_appt_booked_after_retry", path: "/createAppt", body: apptWith(func(*contracts.CreateApptRequest, *bt.Env) {}),
			setup: func(e *bt.Env) { e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited()) }},
		{name: "create_appt_auth_missing", path: "/createAppt", body: apptWith(func(r *contracts.CreateApptRequest, e *bt.Env) {
			r.BookingAuthToken, r.UUI = "", ""
		})},
		{name: "create_appt_auth_malformed", path: "/createAppt", body: apptWith(func(r *contracts.CreateApptRequest, e *bt.Env) {
			r.BookingAuthToken = "no-dot-here"
		})},
		{name: "create_appt_auth_signature_invalid", path: "/createAppt", body: apptWith(func(r *contracts.CreateApptRequest, e *bt.Env) {
			r.BookingAuthToken = e.Tokens.Forge(bt.Patient)
		})},
		{name: "create_appt_auth_expired", path: "/createAppt", body: apptWith(func(r *contracts.CreateApptRequest, e *bt.Env) {
			r.BookingAuthToken = e.Tokens.Expired(bt.Patient)
		})},
		{name: "create_appt_auth_guid_mismatch", path: "/createAppt", body: apptWith(func(r *contracts.CreateApptRequest, e *bt.Env) {
			r.BookingAuthToken = e.Token(bt.Other)
		})},
		{name: "create_appt_queued", path: "/createAppt", body: apptWith(func(*contracts.CreateApptRequest, *bt.Env) {}),
			setup: func(e *bt.Env) { e.Cloud9.Script(cloud9.ProcSetAppointment, bt.RateLimited(), bt.RateLimited()) }},
		{name: "create_appt_queued_uncertain", path: "/createAppt", body: apptWith(func(*contracts.CreateApptRequest, *bt.Env) {}),
			setup: func(e *bt.Env) { e.Cloud9.Script(cloud9.ProcSetAppointment, bt.Timeout()) }},
		{name: "create_appt_validation_missing", path: "/createAppt", body: apptWith(func(r *contracts.CreateApptRequest, e *bt.Env) {
			r.StartTime = ""
		})},
		{name: "create_appt_validation_invalid", path: "/createAppt", body: apptWith(func(r *contracts.CreateApptRequest, e *bt.Env) {
			r.ScheduleColumnGUID, r.BookingToken = "chair-8", "!!"
		})},
		{name: "create_appt_validation_malformed_json", path: "/createAppt",
			body: func(*bt.Env) []byte { return []byte(`{"patientGUID": "x",`) }},
		{name: "create_appt_validation_wrong_type", path: "/createAppt",
			body: func(*bt.Env) []byte { return []byte(`{"patientGUID": 12345, "startTime": "01/21/2026 10:00 AM"}`) }},
		{name: "create_appt_validation_empty", path: "/createAppt", body: func(*bt.Env) []byte { return nil }},
		{name: "create_appt_validation_too_large", path: "/createAppt", body: func(*bt.Env) []byte {
			return []byte(`{"note":"` + strings.Repeat("x", bookinghttp.DefaultMaxBody) + `"}`)
		}},
		{name: "create_appt_slot_reserved", path: "/createAppt", body: apptWith(func(*contracts.CreateApptRequest, *bt.Env) {}),
			setup: func(e *bt.Env) {
				_ = e.Reservations.Reserve(ctx, booking.SlotHold{LocationGUID: booking.DefaultLocationGUID, StartTime: start,
					ScheduleColumnGUID: bt.Column, SessionID: "another-call"})
			}},
		{name: "create_appt_slot_not_available", path: "/createAppt", body: apptWith(func(*contracts.CreateApptRequest, *bt.Env) {}),
			setup: func(e *bt.Env) { e.Cloud9.Script(cloud9.ProcSetAppointment, bt.SlotTaken()) }},
		// Cloud9 does not know the view: flowgate's class is
		// INVALID_SCHEDULE_VIEW, the original's CLOUD9_ERROR (error_type).
		{name: "create_appt_cloud9_error", path: "/createAppt", body: apptWith(func(*contracts.CreateApptRequest, *bt.Env) {}),
			setup: func(e *bt.Env) {
				e.Cloud9.Script(cloud9.ProcSetAppointment,
					bt.ResultError(cloud9.ProcSetAppointment, "Error: Schedule View/Column GUID specified does not exist."))
			}},
		{name: "create_appt_patient_not_found", path: "/createAppt", body: apptWith(func(*contracts.CreateApptRequest, *bt.Env) {}),
			setup: func(e *bt.Env) { e.Cloud9.Script(cloud9.ProcSetAppointment, bt.PatientMissing()) }},
		{name: "create_appt_timeout_not_queued", path: "/createAppt", body: apptWith(func(*contracts.CreateApptRequest, *bt.Env) {}),
			setup: func(e *bt.Env) {
				e.Cloud9.Script(cloud9.ProcSetAppointment, bt.Timeout())
				e.Queue.Err = errors.New("redis down")
			}},
		{name: "create_appt_batch", path: "/createAppt", body: post(func(e *bt.Env) any {
			return contracts.CreateApptRequest{PatientGUID: bt.Patient, BookingAuthToken: e.Token(bt.Patient), UUI: "call-1",
				Children: []contracts.BookingChild{
					{ChildName: "Johnny Smith", StartTime: start, ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column, Note: "Child: Johnny"},
					{ChildName: "Jane Smith", StartTime: "01/21/2026 10:45 AM", ScheduleViewGUID: bt.View, ScheduleColumnGUID: bt.Column},
					{ChildName: "Jim Smith"},
				}}
		}), setup: func(e *bt.Env) {
			e.Cloud9.Script(cloud9.ProcSetAppointment, nil, bt.RateLimited(), bt.RateLimited())
		}},

		{name: "get_appt_slots", path: "/getApptSlots", body: post(func(*bt.Env) any {
			return contracts.GetApptSlotsRequest{StartDate: "01/22/2026", SessionID: "s"}
		}), setup: func(e *bt.Env) {
			e.Slots.List = []contracts.ApptSlot{slot("1/22/2026 9:00:00 AM", "1/22/2026 9:40:00 AM"), slot("1/22/2026 9:40:00 AM", "1/22/2026 10:20:00 AM")}
		}},
		{name: "get_appt_slots_none", path: "/getApptSlots", body: func(*bt.Env) []byte { return nil },
			setup: func(e *bt.Env) { e.Slots.Retries = 7 }}, // the original's 4 × 2 tries found nothing
		{name: "get_appt_slots_wrong_types", path: "/getApptSlots", body: func(*bt.Env) []byte {
			return []byte(`{"sessionId":12345,"uui":98765,"startDate":20270101,"scheduleViewGUIDs":false}`)
		}, setup: func(e *bt.Env) {
			e.Slots.List = []contracts.ApptSlot{slot("1/22/2026 9:00:00 AM", "1/22/2026 9:40:00 AM"), slot("1/22/2026 9:40:00 AM", "1/22/2026 10:20:00 AM")}
		}},
		{name: "get_appt_slots_bad_json", path: "/getApptSlots", body: func(*bt.Env) []byte { return []byte(`[`) }, status: 400},
		{name: "grouped_slots", path: "/getGroupedApptSlots", body: post(func(*bt.Env) any {
			return contracts.GetGroupedApptSlotsRequest{NumberOfPatients: 2, StartDate: "01/22/2026"}
		}), setup: func(e *bt.Env) {
			e.Slots.List = []contracts.ApptSlot{slot("1/22/2026 9:40:00 AM", "1/22/2026 10:20:00 AM"), slot("1/22/2026 9:00:00 AM", "1/22/2026 9:40:00 AM")}
		}},
		{name: "grouped_slots_error", path: "/getGroupedApptSlots", body: func(*bt.Env) []byte { return []byte(`{}`) },
			setup: func(e *bt.Env) { e.Slots.Err = errors.New("cloud9 down") }, status: 500},
		{name: "grouped_slots_none", path: "/getGroupedApptSlots", body: func(*bt.Env) []byte { return []byte(`{"endDate":"01/23/2026"}`) }},
		// Optional fields of a wrong type fall back to their defaults (two
		// children, tomorrow), numbers in text fields are their text: slots
		// are offered, as the original offered them.
		{name: "grouped_slots_wrong_type", path: "/getGroupedApptSlots", body: func(*bt.Env) []byte {
			return []byte(`{"numberOfPatients":"two","uui":98765,"startDate":20270101,"timeWindowMinutes":true}`)
		}, setup: func(e *bt.Env) {
			e.Slots.List = []contracts.ApptSlot{slot("1/22/2026 9:40:00 AM", "1/22/2026 10:20:00 AM"), slot("1/22/2026 9:00:00 AM", "1/22/2026 9:40:00 AM")}
		}},

		{name: "queue_status", method: http.MethodGet, path: "/queue-status?page=1&pageSize=2", setup: queueWithNames, operator: true},
		{name: "queue_status_anonymous", method: http.MethodGet, path: "/queue-status?page=1&pageSize=2", setup: queueWithNames},
		{name: "queue_status_lookup", method: http.MethodGet, path: "/queue-status?uui=call-session-123", setup: func(e *bt.Env) {
			queueWithNames(e) // as the worker answers a lookup: the call's one operation
			r := &e.Queue.StatusResp
			r.Total, r.Completed, r.Failed, r.TotalPages, r.NextCursor, r.PageSize = 1, 0, 0, 1, nil, 50
		}},
		{name: "queue_status_bad_page", method: http.MethodGet, path: "/queue-status?page=zero", status: 400},
		{name: "queue_status_bad_operation_id", method: http.MethodGet, path: "/queue-status?operationId=op-%2A", status: 400},
		{name: "queue_status_empty_key", method: http.MethodGet, path: "/queue-status?sessionId=", status: 400},
		{name: "queue_status_unavailable", method: http.MethodGet, path: "/queue-status", operator: true,
			setup: func(e *bt.Env) { e.Queue.StatusErr = errors.New("redis down") }},
	}
	return cases
}

// run serves c's request on a fresh environment and compares the answer
// with its golden file.
func (c goldenCase) run(t *testing.T) {
	e := bt.NewEnv()
	if c.setup != nil {
		c.setup(e)
	}
	srv := newServerWith(t, e.Service(t, func(cfg *booking.Config) { cfg.PatientModel = c.model }), "",
		bookinghttp.Config{Logger: bt.Discard(), Operator: func(*fiber.Ctx) bool { return c.operator }})
	method, status := c.method, c.status
	if method == "" {
		method = http.MethodPost
	}
	if status == 0 {
		status = 200
	}
	var b []byte
	if c.body != nil {
		b = c.body(e)
	}
	r := srv.do(t, method, base+c.path, b)
	require.Equal(t, status, r.status, "%s", r.body)
	bt.Golden(t, c.name, r.body)
}

// Below the app shell's own limit (web.Options.BodyLimit, whose 413 envelope
// the web package tests), MaxBody gives the booking shape.
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	app, err := web.New(web.Options{Logger: bt.Discard(), BodyLimit: 2048})
	require.NoError(t, err)
	h, err := bookinghttp.New(e.Service(t), bookinghttp.Config{MaxBody: 1024})
	require.NoError(t, err)
	require.NoError(t, bookinghttp.Register(app, h, ""))
	srv := &server{app: app}

	r := srv.do(t, http.MethodPost, base+"/createAppt", []byte(`{"note":"`+strings.Repeat("x", 1500)+`"}`))
	require.Equal(t, 200, r.status)
	var v contracts.ApptValidationResponse
	require.NoError(t, json.Unmarshal(r.body, &v))
	require.Equal(t, contracts.BookingErrValidation, v.Debug.ErrorType)
	require.Contains(t, v.Debug.ErrorMessage, "at most 1024")

}

func TestCompressedBodyRefused(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	srv := newServer(t, e.Service(t), "")
	req := httptest.NewRequest(http.MethodPost, base+"/createAppt", bytes.NewReader(mustJSON(t, appt(e))))
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := srv.app.Test(req, -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var v contracts.ApptValidationResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	require.Contains(t, v.Debug.ErrorMessage, "Content-Encoding")
	require.Empty(t, e.Cloud9.Calls(""))
}

func TestRoutesAndBasePath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "/chord/ortho-prd", "chord/x/": "/chord/x", "/a/b": "/a/b", "/": ""} {
		got, err := bookinghttp.NormalizeBasePath(in)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
	_, err := bookinghttp.NormalizeBasePath("/a b")
	require.Error(t, err)

	e := bt.NewEnv()
	srv := newServer(t, e.Service(t), "/custom/")
	r := srv.do(t, http.MethodPost, "/custom/createAppt", mustJSON(t, appt(e)))
	require.Equal(t, 200, r.status)
	require.Contains(t, string(r.body), `"success":true`)
	require.Equal(t, 404, srv.do(t, http.MethodPost, base+"/createAppt", mustJSON(t, appt(e))).status)
	require.Equal(t, 405, srv.do(t, http.MethodGet, "/custom/createAppt", nil).status)
}

// queue-status hands the lookup keys and the operator check to the
// service, refuses a key given empty or twice (invalid, with the field),
// and keeps its answers out of shared caches.
func TestQueueStatusLookupParams(t *testing.T) {
	t.Parallel()
	e := bt.NewEnv()
	queueWithNames(e)
	var asked []string
	srv := newServerWith(t, e.Service(t), "", bookinghttp.Config{Logger: bt.Discard(), Operator: func(c *fiber.Ctx) bool {
		asked = append(asked, c.Get(fiber.HeaderAuthorization))
		return c.Get(fiber.HeaderAuthorization) == "Basic b3A6cHc="
	}})
	get := func(path, auth string) (*http.Response, []byte) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, base+path, nil)
		if auth != "" {
			req.Header.Set(fiber.HeaderAuthorization, auth)
		}
		resp, err := srv.app.Test(req, -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}

	resp, b := get("/queue-status?operationId=+op-1705764600000-abc123+&sessionId=flowise-1&uui=call-1", "")
	require.Equal(t, 200, resp.StatusCode, "%s", b)
	require.Equal(t, "no-store", resp.Header.Get(fiber.HeaderCacheControl))
	var st contracts.QueueStatusResponse
	require.NoError(t, json.Unmarshal(b, &st))
	require.Equal(t, contracts.QueueScopeLookup, st.Scope)
	require.Empty(t, st.Operations[0].ChildName, "no names without the operator's credentials")

	resp, b = get("/queue-status", "Basic b3A6cHc=")
	require.Equal(t, 200, resp.StatusCode, "%s", b)
	st = contracts.QueueStatusResponse{}
	require.NoError(t, json.Unmarshal(b, &st))
	require.Equal(t, "Johnny Smith", st.Operations[0].ChildName)

	resp, b = get("/queue-status?uui=call-1", "Basic d3Jvbmc6d3Jvbmc=")
	require.Equal(t, 200, resp.StatusCode, "wrong credentials are not refused: %s", b)
	st = contracts.QueueStatusResponse{}
	require.NoError(t, json.Unmarshal(b, &st))
	require.Empty(t, st.Operations[0].ChildName, "wrong credentials are the anonymous view")

	require.Equal(t, []contracts.QueueStatusQuery{
		{OperationID: "op-1705764600000-abc123", SessionID: "flowise-1", UUI: "call-1"},
		{Operator: true},
		{UUI: "call-1"},
	}, e.Queue.Queries())
	require.Equal(t, []string{"", "Basic b3A6cHc=", "Basic d3Jvbmc6d3Jvbmc="}, asked)

	for path, field := range map[string]string{
		"/queue-status?sessionId=a&sessionId=b":           "sessionId",
		"/queue-status?uui=":                              "uui",
		"/queue-status?operationId=%20":                   "operationId",
		"/queue-status?operationId=op-1&operationId=op-2": "operationId",
		"/queue-status?uui=%00":                           "uui",
		"/queue-status?operationId=%2A":                   "operationId",
	} {
		resp, b := get(path, "")
		require.Equal(t, 400, resp.StatusCode, "%s: %s", path, b)
		var env struct {
			Error struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(b, &env), "%s", b)
		require.Equal(t, string(contracts.CodeInvalid), env.Error.Code, path)
		require.Equal(t, field, env.Error.Details["field"], path)
	}
	require.Len(t, e.Queue.Queries(), 3, "refused before the queue is read")

	// Without Config.Operator no request is the operator's.
	e2 := bt.NewEnv()
	queueWithNames(e2)
	plain := newServer(t, e2.Service(t), "")
	r := plain.do(t, http.MethodGet, base+"/queue-status?sessionId=s", nil)
	require.Equal(t, 200, r.status)
	require.NotContains(t, string(r.body), "Johnny")
	require.False(t, e2.Queue.Queries()[0].Operator)
}
