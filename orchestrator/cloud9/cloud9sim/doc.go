// Package cloud9sim is the Cloud9 sandbox simulator (docs/reference/README.md): a real
// HTTP server speaking the Cloud9 Ortho partner XML protocol
// (docs/reference/cloud9-api.md), with patients, appointments and open
// slots in memory, a per-procedure rate limit, and fault injection. Tests,
// benchmarks and the sidecar's embedded default talk to it through the same
// client code path that talks to the real GetData.ashx. It decodes and
// encodes XML itself and shares no code with the client package, so a test
// of the two together proves they agree on the wire.
//
// # Use
//
//	sim := cloud9sim.New(cloud9sim.Config{Scale: 60})
//	url, stop, err := sim.Start("127.0.0.1:0") // http://127.0.0.1:NNNN/GetData.ashx
//	defer stop(context.Background())
//
// or mount sim.Handler() anywhere (POST on any path). Standalone, Main
// (the sidecar exposes it as `flowgate cloud9-sim`) serves until SIGINT or
// SIGTERM, configured by flags: -addr (default 127.0.0.1:8099), -scale,
// -write-limit 5/min, -read-limit, -client-id/-username/-password, -gzip,
// -gzip-declared, -charset, -latency, -error-rate, -empty-rate,
// -blank-slot-type, -seed, -tz, -days, -no-admin. It prints the URL and the practice's GUIDs.
//
// # Protocol
//
// A request is a GetDataRequest in the partners namespace (anything else is
// error 4 "Invalid request input."); credentials are checked when Config
// sets them (error 1); parameters are matched by exact, case-sensitive name
// (patGUID, patguid, startDate…), xsi:nil or blank counts as absent. A
// procedure not served answers error 10 "Procedure '<name>' is not
// authorized.", a missing required parameter error 2, an unparsable value
// error 3 "Invalid value for parameter: '<name>'.", a bad GUID error 5.
// Business-rule failures answer ResponseStatus Success with a Result
// beginning "Error: ", exactly as the real service (ResultSlotTaken and the
// other Result… constants). Answers are HTTP 200, Content-Type
// "text/html; charset=utf-8"; Config.Gzip compresses them without saying so
// (the client must decode by content), GzipDeclared also sets
// Content-Encoding; Config.Charset (e.g. windows-1252) encodes them in
// another charset, named in the XML declaration and the Content-Type.
// Times are written "11/5/2025 8:30:00 AM" (local, no padding) and read as
// M/D/YYYY with an optional h:mm[:ss] AM/PM (padded or not), 24-hour time
// or ISO 8601. Bits answer True/False and read 1/0/True/False.
//
// Procedures: SetPatient, SetAppointment, SetPatientComment,
// SetAppointmentStatusCanceled, SetAppointmentStatusConfirmed (writes), and
// GetOnlineReservations, GetAppointmentListByPatient, GetLocations,
// GetChairSchedules, GetAppointmentTypes, GetPatientInformation,
// GetPortalPatientLookup (reads).
//
//   - SetPatient needs patientFirstName, patientLastName, providerGUID,
//     locationGUID and VendorUserName; any well-formed providerGUID is taken
//     (the sandbox lists no providers), locationGUID must be the location's
//     (else error 16). Answers "Patient Added: <GUID>" (upper case).
//   - SetAppointment checks, in order: Minutes > 0, the patient exists, the
//     type exists and allows online scheduling, the schedule view and column
//     exist, the start is not in the past, and [start, start+Minutes) lies in
//     one day's template hours within the horizon and overlaps no active
//     appointment of that column. A start off the slot grid is accepted if
//     it fits. Answers "Appointment GUID Added: <guid>".
//   - Cancel frees the slot (it reappears in GetOnlineReservations); confirm
//     sets the status Confirmed. Both answer "Success"; an unknown apptGUID
//     answers ResultNoAppointment.
//   - GetOnlineReservations needs startDate and endDate (a bare end date
//     includes that day; more than 28 weeks apart, or reversed, is error 3
//     for endDate) and filters by schdvwGUIDs, appttypGUIDs (comma lists),
//     morning/afternoon (start before/after noon; both default true) and
//     daysOfWeek (seven 0/1, Sunday first — an inference).
//   - GetPatientInformation answers docs/reference/cloud9-api.md's fields: one phone,
//     PatientPhone (no HomePhone, CellPhone, WorkPhone, Phone, PhoneNumber
//     or MobilePhone). GetPortalPatientLookup's pageIndex counts from 1
//     (absent: 1; below 1 is error 3): docs/reference/cloud9-api.md does not settle the
//     base, and the production flow sends 1 for the first page.
//   - GetAppointmentListByPatient lists canceled appointments too
//     (AppointmentStatusDescription Scheduled, Confirmed or Canceled;
//     AppointmentConfirmation Confirmed or Unconfirmed).
//
// # Slots
//
// Open slots are not stored: each read generates them from the weekly
// template (default Monday–Friday 8:00–17:00 and Saturday 8:00–12:30, 45
// minutes, so 12 + 6 slots per chair) for the calendar days from the
// simulated today through HorizonDays (90) days, in every chair of the one
// schedule view, keeps those starting at or after the simulated now, and
// drops those an active appointment overlaps. They are offered for the
// first online, non-deleted appointment type (New Patient Consult). The
// defaults reuse the flows' GUIDs: location 1fef9297-… "CDH Allegheny 202",
// schedule view 4c9e9333-…, chair 8 07687884-…, type f6c20c35-…; chairs
// 9–11, the orthodontist and the other types have fixed made-up GUIDs (see
// the constants).
//
// # Time and rate limit
//
// The simulated clock starts at Config.Now() and runs Scale times as fast.
// Every write procedure has its own sliding window in simulated time
// (default at most 5 calls in any minute; Cloud9's real algorithm is
// unknown, a sliding window is the strictest reading): the next call answers
// error 8 "Too many requests within the timeframe for procedure <name>".
// Only admitted calls enter the window, so a refused call does not extend
// the wait. Reads are unlimited unless ReadLimit or Limits say otherwise.
// The order of checks is: parse, credentials, procedure, rate limit,
// injected error, run.
//
// # Faults
//
// SetFaults changes them at any time: Latency (the call runs, then the
// answer waits; a client timeout shorter than it is an uncertain outcome),
// ErrorRate (error 0, nothing runs), EmptyRecordsRate (a read answers an
// empty <Records />), DropAfterCommit (the next n calls of a procedure run
// and commit, then the connection is closed without an answer — the client
// sees EOF and must look for the appointment before re-sending), and
// Procedures to scope the first three. Draws come from a source seeded by
// Config.Seed, as do GUIDs, so a run is reproducible for a given call order.
//
// # Inspection
//
// Appointments, Patients, Comments, OpenSlots, Calls and RateLimited read the
// state; Reset empties it. With Config.Admin (on in Main), GET /_sim/state,
// PUT /_sim/faults (FaultsJSON) and POST /_sim/reset do the same over HTTP
// for tools outside the process; they are unauthenticated, as is the
// default loopback listener.
package cloud9sim
