package shadow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// FakeGUIDPrefix starts every GUID a dry write makes up: all zeros and
// "5ad0" ("shadow"), so no one takes one for Cloud9's.
const FakeGUIDPrefix = "00000000-5ad0-4000-8000-"

// Reads is the part of the Cloud9 client a dry run passes through: the
// reads of the booking path and its family. *cloud9.Client implements it.
type Reads interface {
	GetAppointmentListByPatient(ctx context.Context, patGUID string) ([]cloud9.Appointment, error)
	GetPatientInformation(ctx context.Context, patGUID string) (cloud9.Record, error)
	GetPortalPatientLookup(ctx context.Context, q cloud9.PatientLookup) ([]cloud9.Record, error)
	GetLocations(ctx context.Context) ([]cloud9.Record, error)
	GetOnlineReservations(ctx context.Context, q cloud9.ReservationQuery) ([]cloud9.Slot, error)
}

// DryCloud9 is the Cloud9 client of the shadow instance: reads go to the
// real client, writes never leave the process — they are checked as the
// client checks them and answered as Cloud9 would, with FakeGUIDPrefix
// GUIDs. It implements booking.Cloud9 and booking.FamilyCloud9.
type DryCloud9 struct {
	Reads
	writes atomic.Int64
}

var (
	_ booking.Cloud9       = (*DryCloud9)(nil)
	_ booking.FamilyCloud9 = (*DryCloud9)(nil)
)

// NewDryCloud9 passes reads to r.
func NewDryCloud9(r Reads) *DryCloud9 { return &DryCloud9{Reads: r} }

// Writes is how many writes were answered dry.
func (d *DryCloud9) Writes() int64 { return d.writes.Load() }

// FakeGUID is a new made-up GUID (FakeGUIDPrefix and 12 random hex digits).
func FakeGUID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return FakeGUIDPrefix + hex.EncodeToString(b[:])
}

func invalid(proc, what string) error {
	return fmt.Errorf("%w: %s: %s (dry run)", cloud9.ErrInvalidInput, proc, what)
}

// SetPatient answers "Patient Added: <fake GUID>".
func (d *DryCloud9) SetPatient(_ context.Context, in cloud9.PatientInput) (string, string, error) {
	if in.FirstName == "" || in.LastName == "" {
		return "", "", invalid(cloud9.ProcSetPatient, "FirstName and LastName are required")
	}
	d.writes.Add(1)
	g := FakeGUID()
	return g, "Patient Added: " + g, nil
}

// SetAppointment answers "Appointment GUID Added: <fake GUID>".
func (d *DryCloud9) SetAppointment(_ context.Context, in cloud9.AppointmentInput) (string, string, error) {
	if in.PatientGUID == "" || in.ScheduleViewGUID == "" || in.ScheduleColumnGUID == "" || in.AppointmentTypeGUID == "" {
		return "", "", invalid(cloud9.ProcSetAppointment, "PatientGUID, ScheduleViewGUID, ScheduleColumnGUID and AppointmentTypeGUID are required")
	}
	if in.Minutes <= 0 {
		return "", "", invalid(cloud9.ProcSetAppointment, "Minutes must be greater than 0")
	}
	if _, err := cloud9.ParseTime(in.StartTime); err != nil {
		return "", "", fmt.Errorf("%w: %s: StartTime: %w", cloud9.ErrInvalidInput, cloud9.ProcSetAppointment, err)
	}
	d.writes.Add(1)
	g := FakeGUID()
	return g, "Appointment GUID Added: " + g, nil
}

// SetPatientComment answers "Patient Comment GUID Added: <fake GUID>".
func (d *DryCloud9) SetPatientComment(_ context.Context, patGUID, comment string) (string, string, error) {
	if patGUID == "" || comment == "" {
		return "", "", invalid(cloud9.ProcSetPatientComment, "patGUID and patComment are required")
	}
	d.writes.Add(1)
	g := FakeGUID()
	return g, "Patient Comment GUID Added: " + g, nil
}

// SetAppointmentStatusCanceled answers "Success".
func (d *DryCloud9) SetAppointmentStatusCanceled(_ context.Context, apptGUID string) (string, error) {
	if apptGUID == "" {
		return "", invalid(cloud9.ProcSetAppointmentStatusCanceled, "apptGUID is required")
	}
	d.writes.Add(1)
	return cloud9.StatusSuccess, nil
}

// SetAppointmentStatusConfirmed answers "Success".
func (d *DryCloud9) SetAppointmentStatusConfirmed(_ context.Context, apptGUID string) (string, error) {
	if apptGUID == "" {
		return "", invalid(cloud9.ProcSetAppointmentStatusConfirmed, "apptGUID is required")
	}
	d.writes.Add(1)
	return cloud9.StatusSuccess, nil
}

// OpenLimiter is the shadow instance's limiter: a turn is always free and
// none is taken from the real one.
type OpenLimiter struct{}

// Allow implements booking.Limiter.
func (OpenLimiter) Allow(context.Context, string) (bool, time.Duration, error) { return true, 0, nil }

// DryQueue is the shadow instance's queue: a booking that would be queued
// is answered queued and forgotten; the queue it shows is empty.
type DryQueue struct{}

var (
	_ booking.Queue           = DryQueue{}
	_ booking.OperationLookup = DryQueue{}
)

// EnqueueAppointment implements booking.Queue.
func (DryQueue) EnqueueAppointment(context.Context, booking.AppointmentTask) error { return nil }

// EnqueuePatient implements booking.Queue.
func (DryQueue) EnqueuePatient(context.Context, booking.PatientTask) error { return nil }

// EnqueueNote implements booking.Queue.
func (DryQueue) EnqueueNote(context.Context, booking.NoteTask) error { return nil }

// Status implements booking.Queue: an empty queue.
func (DryQueue) Status(context.Context, contracts.QueueStatusQuery) (contracts.QueueStatusResponse, error) {
	return contracts.QueueStatusResponse{Operations: []contracts.QueueOperation{}}, nil
}

// Operation implements booking.OperationLookup: never found.
func (DryQueue) Operation(context.Context, string) (contracts.QueueOperation, bool, error) {
	return contracts.QueueOperation{}, false, nil
}

// NoEvents drops the shadow instance's booking events.
type NoEvents struct{}

// Publish implements booking.Events.
func (NoEvents) Publish(context.Context, contracts.BookingCompletedEvent) error { return nil }

// NoSlotChanges drops the shadow instance's slot change events.
type NoSlotChanges struct{}

// PublishSlotChange implements booking.SlotChanges.
func (NoSlotChanges) PublishSlotChange(context.Context, contracts.SlotChangeEvent) error { return nil }
