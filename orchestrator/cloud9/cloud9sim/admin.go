package cloud9sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// adminPrefix is where the admin endpoints live when Config.Admin is set.
const adminPrefix = "/_sim/"

// FaultsJSON is the wire shape of PUT /_sim/faults and of "faults" in GET
// /_sim/state; latency is a Go duration ("250ms").
type FaultsJSON struct {
	Latency          string         `json:"latency,omitempty"`
	ErrorRate        float64        `json:"error_rate,omitempty"`
	EmptyRecordsRate float64        `json:"empty_records_rate,omitempty"`
	DropAfterCommit  map[string]int `json:"drop_after_commit,omitempty"`
	Procedures       []string       `json:"procedures,omitempty"`
}

// Faults converts the wire shape.
func (j FaultsJSON) Faults() (Faults, error) {
	f := Faults{ErrorRate: j.ErrorRate, EmptyRecordsRate: j.EmptyRecordsRate,
		DropAfterCommit: j.DropAfterCommit, Procedures: j.Procedures}
	if j.Latency != "" {
		d, err := time.ParseDuration(j.Latency)
		if err != nil || d < 0 {
			return Faults{}, fmt.Errorf("latency %q: want a duration such as 250ms", j.Latency)
		}
		f.Latency = d
	}
	if j.ErrorRate < 0 || j.ErrorRate > 1 || j.EmptyRecordsRate < 0 || j.EmptyRecordsRate > 1 {
		return Faults{}, fmt.Errorf("rates must be within 0..1")
	}
	return f, nil
}

func faultsJSON(f Faults) FaultsJSON {
	j := FaultsJSON{ErrorRate: f.ErrorRate, EmptyRecordsRate: f.EmptyRecordsRate,
		DropAfterCommit: f.DropAfterCommit, Procedures: f.Procedures}
	if f.Latency > 0 {
		j.Latency = f.Latency.String()
	}
	return j
}

// StateJSON is the answer of GET /_sim/state.
type StateJSON struct {
	Now          string         `json:"now"`
	Patients     int            `json:"patients"`
	Comments     int            `json:"comments"`
	Appointments []ApptJSON     `json:"appointments"`
	Calls        map[string]int `json:"calls"`
	RateLimited  map[string]int `json:"rate_limited"`
	Faults       FaultsJSON     `json:"faults"`
}

// ApptJSON is one appointment of StateJSON.
type ApptJSON struct {
	GUID               string `json:"guid"`
	PatientGUID        string `json:"patient_guid"`
	ScheduleColumnGUID string `json:"schedule_column_guid"`
	StartTime          string `json:"start_time"`
	Minutes            int    `json:"minutes"`
	Status             string `json:"status"`
}

// serveAdmin: GET /_sim/state, PUT /_sim/faults, POST /_sim/reset.
func (s *Sim) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == adminPrefix+"state" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.state())
	case r.URL.Path == adminPrefix+"faults" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
		var j FaultsJSON
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&j); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		f, err := j.Faults()
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		s.SetFaults(f)
		writeJSON(w, http.StatusOK, faultsJSON(s.Faults()))
	case r.URL.Path == adminPrefix+"reset" && r.Method == http.MethodPost:
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{
			"error": "admin endpoints: GET /_sim/state, PUT /_sim/faults, POST /_sim/reset"})
	}
}

func (s *Sim) state() StateJSON {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := StateJSON{Now: formatTime(s.Now()), Patients: len(s.patientOrder), Comments: len(s.commentOrder),
		Appointments: make([]ApptJSON, 0, len(s.apptOrder)),
		Calls:        map[string]int{}, RateLimited: map[string]int{}}
	for _, a := range s.apptOrder {
		st.Appointments = append(st.Appointments, ApptJSON{GUID: a.GUID, PatientGUID: a.PatientGUID,
			ScheduleColumnGUID: a.ScheduleColumnGUID, StartTime: formatTime(a.Start), Minutes: a.Minutes, Status: a.Status})
	}
	for k, v := range s.calls {
		st.Calls[k] = v
	}
	for k, v := range s.limited {
		st.RateLimited[k] = v
	}
	f := s.faults.f
	f.DropAfterCommit = copyCounts(f.DropAfterCommit)
	st.Faults = faultsJSON(f)
	return st
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
