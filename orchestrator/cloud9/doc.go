// Package cloud9 is flowgate's client of the Cloud9 Ortho partner API
// (docs/reference/cloud9-api.md): one XML envelope, POSTed to one URL,
// naming a procedure and its parameters.
//
// The pieces, one file each:
//
//   - xml.go: the GetDataRequest / GetDataResponse envelope. Values are
//     escaped by encoding/xml; answers are decoded by content (real answers
//     are labelled text/html and often gzip-compressed without saying so).
//   - errors.go: the typed errors (transport, ResponseStatus=Error, a Result
//     beginning "Error:" under a Success status, an empty answer) and their
//     classification into the seed's error types.
//   - client.go: Config, Client.Call, per-call timeouts by procedure kind
//     (writes 45 s, notes 15 s, reads 60 s), metrics, and Client.Wait.
//   - limiter.go: one GCRA limiter per procedure in Redis, shared by every
//     caller and every instance, so flowgate never provokes Cloud9's
//     "Too many requests".
//   - procedures.go: typed calls for the procedures flowgate uses.
//   - timefmt.go: Cloud9's "M/D/YYYY h:mm:ss AM" times.
//
// The client never waits for the limiter by itself: when the limiter says
// "not yet", Call returns a *LimitedError with the delay, and the caller
// decides. The synchronous booking path waits through Client.Wait when the
// delay fits its budget; an Asynq handler returns asynqrt.Defer. A
// caller that consults the limiter itself uses Client.WithoutLimiter, so a
// call never spends two turns.
//
// Whether a failed write may have been committed by Cloud9 is reported by
// Error.Uncertain. A SetAppointment that failed uncertainly must not be sent
// again before GetAppointmentListByPatient has shown that the appointment
// does not exist (Appointment.Matches).
package cloud9
