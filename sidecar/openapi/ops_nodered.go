package openapi

import (
	"net/http"

	"github.com/flowgate/flowgate/contracts"
)

// opsNodeRed are the Node-RED booking family (orchestrator/booking/
// bookinghttp) under NODERED_BASE_PATH: 200 for every outcome of
// createAppt, the seed's shapes, never the error envelope (but for the
// slot endpoints' unreadable bodies and queue-status' bad pages and keys).
func opsNodeRed() []Op {
	const tag = "node-red"
	patient := []any{contracts.PatientCreatedResponse{}, contracts.PatientQueuedResponse{}, contracts.PatientFailedResponse{}}
	appt := []any{contracts.ApptBookedResponse{}, contracts.ApptQueuedResponse{}, contracts.ApptFailedResponse{},
		contracts.ApptAuthRejectedResponse{}, contracts.ApptValidationResponse{}, contracts.ApptSlotReservedResponse{},
		contracts.ApptDuplicateSlotResponse{}, contracts.ApptBatchResponse{}}
	consult := []any{contracts.ConsultationResponse{}}
	return []Op{
		{Method: http.MethodPost, Path: BasePath + "/createPatient", Tag: tag, Summary: "Create the parent (or a child) patient; bookingAuthToken",
			Request: []any{contracts.CreatePatientRequest{}}, Responses: []Resp{
				{Status: s200, Desc: "created, cached, queued, or the validation failure", Body: patient},
				{Status: s500, Desc: "Cloud9 refused the patient (PATIENT_CREATE_FAILED / CHILD_CREATE_FAILED)", Body: []any{contracts.PatientFailedResponse{}}}}},
		{Method: http.MethodPost, Path: BasePath + "/createAppt", Tag: tag, Summary: "Book one appointment or children[] (200 for every outcome)",
			Request: []any{contracts.CreateApptRequest{}}, Responses: []Resp{{Status: s200, Desc: "_debug.error_type tells the outcome", Body: appt}}},
		{Method: http.MethodPost, Path: BasePath + "/getApptSlots", Tag: tag, Summary: "Open slots with bookingTokens",
			Request: []any{contracts.GetApptSlotsRequest{}}, Responses: []Resp{
				{Status: s200, Desc: "slots, or none with the transfer guidance", Body: []any{contracts.GetApptSlotsResponse{}}},
				{Status: s400, Desc: "unreadable body", Body: errBody}}},
		{Method: http.MethodPost, Path: BasePath + "/getGroupedApptSlots", Tag: tag, Summary: "Consecutive slots for siblings and a booking plan",
			Request: []any{contracts.GetGroupedApptSlotsRequest{}}, Responses: []Resp{
				{Status: s200, Desc: "groups, or none with the transfer guidance", Body: []any{contracts.GroupedSlotsResponse{}}},
				{Status: s400, Desc: "unreadable body", Body: errBody},
				{Status: s500, Desc: "Cloud9 could not be read: the transfer guidance, as the original answered", Body: []any{contracts.GroupedSlotsResponse{}}}}},
		{Method: http.MethodGet, Path: BasePath + "/queue-status", Tag: tag,
			Summary: "The async booking queue (the monitoring credentials), or the caller's own operations, paginated",
			Description: "With the monitoring credentials (basic auth, as /monitoring) and no lookup key: every operation, " +
				"names included (scope \"all\"). Otherwise only the operations the keys name (scope \"lookup\"): " +
				"operationId (a queued answer's), or the sessionId / uui the call sent with createAppt, createPatient or " +
				"bookConsultation (either matches) — without the patient's and child's names unless the credentials are " +
				"sent; the counts cover those operations. Without credentials and keys: no operations. Missing or wrong " +
				"credentials are never refused (no 401). With MONITORING_AUTH=none or no MONITORING_USER, nobody gets " +
				"the whole queue (Asynqmon at /monitoring shows it).",
			Query: []string{"page", "pageSize", "cursor", "operationId", "sessionId", "uui"}, Auth: AuthMonitor, AuthOptional: true,
			Responses: []Resp{
				{Status: s200, Desc: "operations in scope; {\"error\"} when the queue cannot be read", Body: []any{contracts.QueueStatusResponse{}}},
				{Status: s400, Desc: "bad page, pageSize or cursor; a malformed, empty or repeated operationId, sessionId or uui (code invalid, details.field)", Body: errBody},
				{Status: s503, Desc: "Redis did not answer within the sync budget", Body: errBody}}},
		{Method: http.MethodPost, Path: BasePath + "/bookConsultation", Tag: tag, Summary: "Parent + children + appointments in one call",
			Request: []any{contracts.BookConsultationRequest{}}, Responses: []Resp{
				{Status: s200, Desc: "every child booked; or bad input (validation shape, nothing changed)",
					Body: []any{contracts.ConsultationResponse{}, contracts.ConsultValidationResponse{}}},
				{Status: s202, Desc: "something queued: it completes in the background (operationIds)", Body: consult},
				{Status: s207, Desc: "some children booked, some not", Body: consult},
				{Status: s500, Desc: "nothing booked (parent refused, or every child)", Body: consult}}},
	}
}
