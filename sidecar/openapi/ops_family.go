package openapi

import (
	"net/http"

	"github.com/flowgate/flowgate/contracts"
)

// opsFamily are the rest of the Node-RED family (bookinghttp/family.go):
// 200 in the endpoint's own shape for every outcome (bad input included),
// 500 when Cloud9 or the limiter could not do the work, 503 when Redis
// failed.
func opsFamily() []Op {
	const tag = "node-red"
	post := func(path, summary string, req, resp any) Op {
		return Op{Method: http.MethodPost, Path: BasePath + path, Tag: tag, Summary: summary, Request: []any{req},
			Responses: []Resp{{Status: s200, Desc: "the answer (also for bad input: error + llm_guidance)", Body: []any{resp}},
				{Status: s500, Desc: "Cloud9 or the limiter could not do the work", Body: []any{resp}},
				{Status: s503, Desc: "flowgate's Redis failed", Body: errBody}}}
	}
	status := []Resp{{Status: s200, Desc: "one operation's state, attempts, last error and result", Body: []any{contracts.OperationStatusResponse{}}},
		{Status: s503, Desc: "flowgate's Redis failed", Body: errBody}}
	return []Op{
		post("/getPatient", "A patient's record", contracts.GetPatientRequest{}, contracts.PatientResponse{}),
		post("/getPatientByFilter", "Patients by name (filter) or phone", contracts.GetPatientByFilterRequest{}, contracts.PatientSearchResponse{}),
		post("/getPatientAppts", "A patient's appointments", contracts.GetPatientApptsRequest{}, contracts.PatientApptsResponse{}),
		post("/editInsurance", "The insurance comment", contracts.EditInsuranceRequest{}, contracts.ResultResponse{}),
		post("/confirmAppt", "Confirm an appointment", contracts.ConfirmApptRequest{}, contracts.ResultResponse{}),
		post("/cancelAppt", "Cancel an appointment (the slot goes back to the cache)", contracts.CancelApptRequest{}, contracts.CancelResponse{}),
		post("/getLocation", "One location or all", contracts.GetLocationRequest{}, contracts.LocationResponse{}),
		{Method: http.MethodGet, Path: BasePath + "/checkOperationStatus", Tag: tag, Summary: "A queued operation by operationId",
			Query: []string{"operationId"}, Responses: status},
		{Method: http.MethodGet, Path: BasePath + "/operations/:operationId", Tag: tag, Summary: "A queued operation", Responses: status},
	}
}
