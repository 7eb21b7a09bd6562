// Package contracts holds flowgate's wire shapes: request and response
// structs, validation tags, error codes and the error envelope, for every
// external contract flowgate mirrors (Node-RED booking endpoints, the n8n
// task queue and webhooks). It imports only the standard library so every
// other package can share it.
//
// Golden JSON fixtures for each shape live in contracts/testdata; the
// contractstest package compares against them and rewrites them with
// `go test ./contracts/... -update`.
//
// # Booking endpoints
//
// Booking endpoints (docs/booking.md, docs/reference/nodered-endpoints.md
// §1; booking*.go): the Node-RED family flowgate answers under
// NODERED_BASE_PATH. Unlike the flowgate-native APIs they never answer the
// ErrorResponse envelope: every outcome of createAppt is a 200 with one of
// the shapes of booking.go, and the llm_guidance texts are part of the
// contract (the Flowise IVA reads them).
//
// Field names, nesting and texts are pinned by the goldens
// contracts/testdata/booking_*.golden and http_booking_*.golden.
//
// bookConsultation (docs/reference/nodered-endpoints.md §1.3;
// booking_consult.go): parent + children + appointments in one call. The
// HTTP status tells the outcome (ConsultStatus): 200 every child booked,
// 202 something queued (it completes in the background), 207 some children
// booked and some failed, 500 nothing booked. Bad input is a 200 with the
// validation shape (DESIGN principle: a voice assistant always gets
// guidance; the original answered 500 "fatal_error").
//
// The rest of the Node-RED booking family
// (docs/reference/nodered-endpoints.md §1.6; booking_family.go):
// getPatient, getPatientByFilter, getPatientAppts, editInsurance,
// confirmAppt, cancelAppt, getLocation, and the operation status the
// original's check_status_endpoint names but never built. The success
// shapes are the original's (nodered-shapes.json); Cloud9 records pass
// through as string maps, with the original's added keys. Bad input keeps
// the endpoint's shape and adds `error` and an `llm_guidance`
// (FamilyGuidance) telling the assistant what to do.
//
// What the original flow tells the voice assistant, value for value
// (docs/reference/nodered-guidance.md; booking_guidance.go): the lists
// every llm_guidance of createAppt, getApptSlots and bookConsultation
// carries, its transfer sentences, and its classifier of Cloud9 messages.
// Each builder copies a list (the functions return a fresh slice), so an
// answer can never change another's.
//
// # Queue status
//
// GET queue-status (docs/booking.md#queue-status-who-sees-what;
// booking_queue.go): the queued booking operations. The seed's fields come
// first and keep their meaning; pagination, the lookup keys, scope and a
// few fields the production flow added are new.
//
// Who sees what: the whole queue, with the patients' and children's
// names, only for a request with the operator's (monitoring) credentials.
// Any other caller gets only the operations it names — by operationId, or
// by the sessionId / uui of the call that queued them — in the same shape,
// without names (scope "lookup"); naming none, it gets none.
//
// # Shadow mode
//
// Shadow mode (docs/switch-over.md, "Shadow first"; shadow.go): the
// Node-RED kit mirrors a request it answered from the original node to
// flowgate (POST /api/shadow/mirror, ShadowMirror); flowgate answers it dry
// and compares; GET /api/shadow/report (ShadowReport) and the /switch-over
// page show the comparison per endpoint and group.
package contracts
