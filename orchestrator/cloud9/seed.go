package cloud9

// The seed practice's Cloud9 records (docs/reference/nodered-endpoints.md): the location,
// schedule view, chair and appointment type the Node-RED flows hard-code.
// They are defined here once; the booking path's defaults
// (booking.Default*GUID, the sidecar's CLOUD9_*_GUID settings) and the
// simulator's records (cloud9sim) read them.
const (
	SeedLocationGUID        = "1fef9297-7c8b-426b-b0d1-f2275136e48b" // CDH Allegheny 202
	SeedScheduleViewGUID    = "4c9e9333-4951-4eb0-8d97-e1ad83ef422d"
	SeedChair8GUID          = "07687884-7e37-49aa-8028-d43b751c9034" // the flows' "CHAIR 8"
	SeedAppointmentTypeGUID = "f6c20c35-9abb-47c2-981a-342996016705" // New Patient Consult, 45 min
)
