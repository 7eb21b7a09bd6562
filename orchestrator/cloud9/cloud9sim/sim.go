package cloud9sim

import (
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Appointment status descriptions (GetAppointmentListByPatient).
const (
	StatusScheduled = "Scheduled"
	StatusConfirmed = "Confirmed"
	StatusCanceled  = "Canceled"
)

// Appointment is a booked appointment as the simulator holds it.
type Appointment struct {
	GUID                string
	PatientGUID         string
	ScheduleViewGUID    string
	ScheduleColumnGUID  string
	AppointmentTypeGUID string
	OrthodontistGUID    string
	// Start is the local start time in Config.TimeZone.
	Start          time.Time
	Minutes        int
	VendorUserName string
	Note           string
	// Status is StatusScheduled, StatusConfirmed or StatusCanceled.
	Status string
	// Created is the simulated time of the SetAppointment.
	Created time.Time
}

// End is Start plus Minutes.
func (a Appointment) End() time.Time { return a.Start.Add(time.Duration(a.Minutes) * time.Minute) }

// Active reports an appointment that holds its slot (not canceled).
func (a Appointment) Active() bool { return a.Status != StatusCanceled }

// Patient is a patient created by SetPatient.
type Patient struct {
	GUID                        string // upper case, as Cloud9 answers it
	PatID                       int
	FirstName, LastName         string
	BirthDate                   time.Time // zero when not given
	Phone, Email, Gender        string
	Street, City, State, Postal string
	ProviderGUID, LocationGUID  string
	VendorUserName, Note        string
	Created                     time.Time
}

// Comment is a patient comment created or edited by SetPatientComment.
type Comment struct {
	GUID, PatientGUID, Text, VendorUserName string
	Created, Updated                        time.Time
}

// Sim is an in-memory Cloud9 partner API. All methods are safe for
// concurrent use.
type Sim struct {
	cfg Config
	// anchorReal and anchorSim tie the simulated clock to the real one.
	anchorReal, anchorSim time.Time
	slotType              AppointmentType // the type open slots offer

	mu           sync.Mutex
	patients     map[string]*Patient // by lower-case GUID
	patientOrder []*Patient
	appts        map[string]*Appointment // by GUID
	apptOrder    []*Appointment
	byColumnDay  map[columnDay][]*Appointment // active appointments only
	comments     map[string]*Comment
	commentOrder []*Comment
	nextPatID    int
	ids          *rand.ChaCha8 // GUIDs
	limiter      *limiter
	calls        map[string]int
	limited      map[string]int
	faults       faultState
	requests     []Request // Config.RecordRequests
}

// columnDay indexes appointments by schedule column and local date.
type columnDay struct {
	column string
	date   string // YYYY-MM-DD
}

// New makes a simulator. It panics on a configuration Validate refuses.
func New(cfg Config) *Sim {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	cfg.Chairs = append([]Chair(nil), cfg.Chairs...)
	cfg.AppointmentTypes = append([]AppointmentType(nil), cfg.AppointmentTypes...)
	limits := make(map[string]Rate, len(cfg.Limits))
	for k, v := range cfg.Limits {
		limits[k] = v
	}
	cfg.Limits = limits
	for i := range cfg.Chairs {
		cfg.Chairs[i].GUID = canonical(cfg.Chairs[i].GUID)
	}
	for i := range cfg.AppointmentTypes {
		cfg.AppointmentTypes[i].GUID = canonical(cfg.AppointmentTypes[i].GUID)
		cfg.AppointmentTypes[i].ClassGUID = canonical(cfg.AppointmentTypes[i].ClassGUID)
	}
	cfg.Location.GUID = canonical(cfg.Location.GUID)
	cfg.ScheduleView.GUID = canonical(cfg.ScheduleView.GUID)
	cfg.Orthodontist.GUID = canonical(cfg.Orthodontist.GUID)
	now := cfg.Now()
	s := &Sim{cfg: cfg, anchorReal: now, anchorSim: now}
	for _, t := range cfg.AppointmentTypes {
		if t.AllowOnline && !t.Deleted {
			s.slotType = t
			break
		}
	}
	s.reset()
	return s
}

func canonical(g string) string {
	if g == "" {
		return ""
	}
	return uuid.MustParse(g).String()
}

// reset empties the state; s.mu must be held (or s not yet shared).
func (s *Sim) reset() {
	s.patients = map[string]*Patient{}
	s.patientOrder = nil
	s.appts = map[string]*Appointment{}
	s.apptOrder = nil
	s.byColumnDay = map[columnDay][]*Appointment{}
	s.comments = map[string]*Comment{}
	s.commentOrder = nil
	s.nextPatID = 10001
	var seed [32]byte
	for i := 0; i < 8; i++ {
		seed[i] = byte(uint64(s.cfg.Seed) >> (8 * i))
	}
	copy(seed[8:], "cloud9sim-ids")
	s.ids = rand.NewChaCha8(seed)
	s.limiter = newLimiter(s.cfg.Window)
	s.calls = map[string]int{}
	s.limited = map[string]int{}
	s.requests = nil
	s.faults = newFaultState(s.cfg.Seed)
}

// Reset returns the simulator to its state after New: no patients,
// appointments or comments, counters and rate windows empty, faults off,
// the random sources reseeded. The simulated clock runs on.
func (s *Sim) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

// Config answers the configuration in effect (defaults filled in); treat
// it as read-only.
func (s *Sim) Config() Config { return s.cfg }

// Now answers the simulated time in the location's zone.
func (s *Sim) Now() time.Time {
	real := s.cfg.Now()
	if s.cfg.Scale == 1 {
		return real.In(s.cfg.TimeZone)
	}
	d := time.Duration(float64(real.Sub(s.anchorReal)) * s.cfg.Scale)
	return s.anchorSim.Add(d).In(s.cfg.TimeZone)
}

// newGUID draws a GUID from the seeded source; s.mu must be held.
func (s *Sim) newGUID() string {
	g, err := uuid.NewRandomFromReader(s.ids)
	if err != nil { // ChaCha8 never fails to read
		panic(err)
	}
	return g.String()
}

// Appointments answers every appointment, canceled ones too, in booking
// order.
func (s *Sim) Appointments() []Appointment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Appointment, len(s.apptOrder))
	for i, a := range s.apptOrder {
		out[i] = *a
	}
	return out
}

// Patients answers every patient in creation order.
func (s *Sim) Patients() []Patient {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Patient, len(s.patientOrder))
	for i, p := range s.patientOrder {
		out[i] = *p
	}
	return out
}

// Comments answers every patient comment in creation order.
func (s *Sim) Comments() []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Comment, len(s.commentOrder))
	for i, c := range s.commentOrder {
		out[i] = *c
	}
	return out
}

// Calls answers how many well-formed requests named procedure, whatever
// their answer (rate-limited, failed and dropped ones included).
func (s *Sim) Calls(procedure string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[procedure]
}

// RateLimited answers how many calls of procedure were answered code 8.
func (s *Sim) RateLimited(procedure string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited[procedure]
}

// Handler serves the protocol (POST, any path) and, with Config.Admin, the
// admin endpoints under /_sim/.
func (s *Sim) Handler() http.Handler {
	if !s.cfg.Admin {
		return http.HandlerFunc(s.serveProtocol)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, adminPrefix) {
			s.serveAdmin(w, r)
			return
		}
		s.serveProtocol(w, r)
	})
}

// addAppointment stores a new appointment; s.mu must be held.
func (s *Sim) addAppointment(a *Appointment) {
	s.appts[a.GUID] = a
	s.apptOrder = append(s.apptOrder, a)
	k := columnDay{a.ScheduleColumnGUID, a.Start.Format(time.DateOnly)}
	s.byColumnDay[k] = append(s.byColumnDay[k], a)
}

// cancel frees an appointment's slot; s.mu must be held.
func (s *Sim) cancel(a *Appointment) {
	if !a.Active() {
		return
	}
	a.Status = StatusCanceled
	k := columnDay{a.ScheduleColumnGUID, a.Start.Format(time.DateOnly)}
	list := s.byColumnDay[k]
	for i, b := range list {
		if b == a {
			s.byColumnDay[k] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
}

// patientAppointments answers a patient's appointments by start time;
// s.mu must be held.
func (s *Sim) patientAppointments(patient string) []*Appointment {
	var out []*Appointment
	for _, a := range s.apptOrder {
		if strings.EqualFold(a.PatientGUID, patient) {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}
