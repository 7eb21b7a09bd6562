// Package familytest starts the Cloud9 simulator with a real Cloud9 client
// for the tests of the Node-RED family endpoints (phone index, booking's
// family, bookinghttp), and seeds it with patients and appointments
// through the client, as production would create them.
package familytest

import (
	"context"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// Env is a running simulator and a client on it.
type Env struct {
	Sim    *cloud9sim.Sim
	Client *cloud9.Client
	URL    string
}

// New starts a simulator (seeded, unlimited unless cfg says otherwise) and
// a client without a limiter; both stop with t.
func New(t testing.TB, cfg cloud9sim.Config) *Env {
	t.Helper()
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.WriteLimit == (cloud9sim.Rate{}) {
		cfg.WriteLimit = cloud9sim.Unlimited
	}
	sim := cloud9sim.New(cfg)
	url, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("familytest: start the simulator: %v", err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	c, err := cloud9.New(cloud9.Config{Endpoint: url, ClientID: "sandbox", Username: "sandbox", Password: "sandbox",
		VendorUsername: "flowgate", ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("familytest: client: %v", err)
	}
	t.Cleanup(c.Close)
	return &Env{Sim: sim, Client: c, URL: url}
}

// Location is the simulator's practice location GUID.
func (e *Env) Location() string { return e.Sim.Config().Location.GUID }

// Patient creates a patient with phone at the simulator's location.
func (e *Env) Patient(t testing.TB, first, last, phone string) string {
	t.Helper()
	guid, _, err := e.Client.SetPatient(context.Background(), cloud9.PatientInput{FirstName: first, LastName: last,
		ProviderGUID: cloud9sim.DefaultOrthodontistGUID, LocationGUID: e.Location(), Phone: phone,
		Email: first + "@example.com", BirthDate: "01/15/2015"})
	if err != nil {
		t.Fatalf("familytest: SetPatient: %v", err)
	}
	return guid
}

// Slot is an open slot of the simulator at least days ahead.
func (e *Env) Slot(t testing.TB, days int) cloud9.Slot {
	t.Helper()
	from := e.Sim.Now().AddDate(0, 0, days)
	list, err := e.Client.GetOnlineReservations(context.Background(), cloud9.ReservationQuery{StartDate: from, EndDate: from.AddDate(0, 0, 14)})
	if err != nil || len(list) == 0 {
		t.Fatalf("familytest: no open slot (%v)", err)
	}
	return list[0]
}

// Appointment books slot for patient and returns the appointment GUID.
func (e *Env) Appointment(t testing.TB, patient string, s cloud9.Slot) string {
	t.Helper()
	minutes := s.Minutes
	if minutes <= 0 {
		minutes = 45
	}
	guid, _, err := e.Client.SetAppointment(context.Background(), cloud9.AppointmentInput{PatientGUID: patient,
		StartTime: s.StartTime, ScheduleViewGUID: s.ScheduleViewGUID, ScheduleColumnGUID: s.ScheduleColumnGUID,
		AppointmentTypeGUID: s.AppointmentTypeGUID, Minutes: minutes})
	if err != nil {
		t.Fatalf("familytest: SetAppointment: %v", err)
	}
	return guid
}
