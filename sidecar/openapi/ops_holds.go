package openapi

import (
	"net/http"

	"github.com/flowgate/flowgate/orchestrator/holds/availability/availhttp"
	"github.com/flowgate/flowgate/orchestrator/holds/holdshttp"
)

// opsHolds are the slot holds (orchestrator/holds/holdshttp), the
// availability API and its admin (availability/availhttp), the live holds
// stream and its board (holdstream). Request bodies without an exported
// type are described as objects; their fields are in the handlers' docs.
func opsHolds() []Op {
	const tag = "holds"
	obj := []any{map[string]any{}}
	errs := []Resp{{Status: s400, Desc: "bad input (details.field)", Body: errBody}, {Status: s404, Desc: "unknown id", Body: errBody},
		{Status: s409, Desc: "conflict (slot held or booked: details.reason slot_taken; hold expired)", Body: errBody}, {Status: s503, Desc: "Redis unavailable", Body: errBody}}
	op := func(method, path, summary string, req []any, query []string, body any) Op {
		return Op{Method: method, Path: path, Tag: tag, Summary: summary, Request: req, Query: query,
			Responses: append([]Resp{{Status: s200, Desc: "ok", Body: []any{body}}}, errs...)}
	}
	admin := func(method, path, summary string, req []any) Op {
		o := op(method, "/v1/admin/availability"+path, summary, req, nil, map[string]any{})
		o.Tag, o.Auth = "availability-admin", AuthMonitor
		return o
	}
	return []Op{
		op(http.MethodPost, "/v1/holds", "Hold a slot {appointmentTypeId, slotStartDate, clientId, specialistId?}: 201 answers holdId, the hold's secret (answered here only), and holdRef, its public reference on the stream",
			obj, nil, holdshttp.HoldResponse{}),
		{Method: http.MethodPatch, Path: "/v1/holds", Tag: tag, Request: obj,
			Summary: "Keep a hold alive {holdId, clientId}: the holdId of POST /v1/holds (not an event's holdRef)",
			Responses: []Resp{{Status: s200, Desc: "{ok:true, holdId, holdExpiresAt}: extended; {ok:false} (seed 002): no live web hold of this client " +
				"with that id — expired, released, booked, unknown, another client's or not a web hold; hold the slot again", Body: []any{holdshttp.HeartbeatResponse{}}},
				errs[0], errs[3]}},
		op(http.MethodDelete, "/v1/holds/:holdId", "Release a hold (the holdId of POST /v1/holds)", nil, []string{"clientId"}, holdshttp.ReleaseResponse{}),
		{Method: http.MethodPost, Path: "/v1/appointment-types/:id/book", Tag: tag, Request: []any{holdshttp.BookRequest{}},
			Summary: "Book a held slot {holdId, clientId, patientGUID?, bookingAuthToken?}; a Cloud9-sourced type is booked in Cloud9 through the booking core and needs patientGUID (and its bookingAuthToken when BOOKING_AUTH_MODE is token)",
			Responses: []Resp{{Status: s201, Desc: "booked (a Cloud9-sourced type: made in Cloud9, status booked, cloud9AppointmentGUID)", Body: []any{holdshttp.BookResponse{}}},
				{Status: s202, Desc: "Cloud9-sourced type: queued by the booking core (sync budget exhausted, or Cloud9's answer uncertain); the operation in queue-status' shape",
					Body: []any{holdshttp.BookQueuedResponse{}}},
				errs[0], errs[1],
				{Status: s401, Desc: "Cloud9-sourced type: the bookingAuthToken is missing (BOOKING_AUTH_MODE token) or not the patient's; details.errorType BOOKING_AUTH_* (the hold is kept)", Body: errBody},
				{Status: s409, Desc: "hold expired or not the client's; slot taken or refused by Cloud9 (details.reason slot_taken)", Body: errBody},
				{Status: s422, Desc: "PATIENT_REQUIRED: a Cloud9-sourced type needs patientGUID (the hold is kept)", Body: errBody},
				{Status: s503, Desc: "Redis or Cloud9 unavailable, nothing queued", Body: errBody}}},
		op(http.MethodDelete, "/v1/appointments/:appointmentId", "Cancel an appointment (the appointmentId /book answered: a secret of the booker)", nil, nil, holdshttp.CancelResponse{}),
		op(http.MethodGet, "/v1/appointment-types", "Appointment types", nil, nil, availhttp.AppointmentTypesResponse{}),
		op(http.MethodGet, "/v1/appointment-types/:id/timeslots", "Open timeslots", nil,
			[]string{"specialistId", "from", "days", "includeHeld", "clientId"}, availhttp.TimeslotsResponse{}),
		admin(http.MethodGet, "/schedule", "The schedule", nil),
		admin(http.MethodPut, "/specialists/:specialistId/weekly-hours", "A specialist's weekly hours", obj),
		admin(http.MethodPut, "/specialists/:specialistId/overrides/:date", "A day's override", obj),
		admin(http.MethodDelete, "/specialists/:specialistId/overrides/:date", "Remove a day's override", nil),
		admin(http.MethodDelete, "/specialists/:specialistId", "Remove a specialist", nil),
		admin(http.MethodPut, "/appointment-types/:id", "An appointment type", obj),
		{Method: http.MethodGet, Path: "/v1/holds/stream", Tag: tag, Summary: "Live holds (Server-Sent Events)",
			Description: "leaseMs: the stream's lifetime (default HOLDS_STREAM_LEASE_DEFAULT, 15 min; at least 1000); a larger one than " +
				"HOLDS_STREAM_LEASE_MAX (1 h) is clamped to it, as seed 002 does — the init event's leaseMs is the lease in force",
			Query: []string{"clientId", "appointmentTypeId", "leaseMs"}, Responses: []Resp{
				{Status: s200, Desc: "an event stream", ContentType: "text/event-stream"},
				{Status: s400, Desc: "bad input (details.field; leaseMs not an integer or below 1000)", Body: errBody}}},
		{Method: http.MethodDelete, Path: "/v1/holds/stream", Tag: tag,
			Summary: "End a client's stream: streamToken is the one its init event gave (a clientId alone ends nothing)",
			Query:   []string{"clientId", "streamToken"}, Responses: []Resp{
				{Status: s204, Desc: "asked of every instance (the stream with that clientId and streamToken ends with client-cancel; any other is left alone)"},
				{Status: s400, Desc: "bad input (details.field)", Body: errBody}, {Status: s503, Desc: "Redis unavailable", Body: errBody}}},
		{Method: http.MethodGet, Path: "/board", Tag: tag, Summary: "The live holds board (HTML): without appointmentTypeId the list of appointment types",
			Query:     []string{"appointmentTypeId", "date"},
			Responses: []Resp{{Status: s200, Desc: "an HTML page", ContentType: "text/html"}, {Status: s400, Desc: "a malformed appointmentTypeId or date", Body: errBody}}},
	}
}
