package cloud9sim

import (
	"strconv"
	"time"
)

// GetPatientList joins the procedures the simulator serves here rather
// than in the table of writes.go: it is the family endpoints' read
// (getPatientByFilter by phone).
func init() {
	procedures["GetPatientList"] = procedure{run: (*Sim).getPatientList}
}

// getPatientList answers the patients of the locations named by LocGUIDs
// (comma-separated GUIDs; absent: all), in creation order, without phone
// or e-mail — as Cloud9 does, whose callers then ask GetPatientInformation
// for each.
func (s *Sim) getPatientList(p params, _ time.Time) ([]record, error) {
	locs, err := p.guidList("LocGUIDs")
	if err != nil {
		return nil, err
	}
	var out []record
	for _, pt := range s.patientOrder {
		if len(locs) > 0 && !locs[canonical(pt.LocationGUID)] {
			continue
		}
		out = append(out, record{
			{"PatientGUID", pt.GUID},
			{"PatientID", strconv.Itoa(pt.PatID)},
			{"PatientFirstName", pt.FirstName},
			{"PatientLastName", pt.LastName},
			{"PatientFullName", pt.LastName + ", " + pt.FirstName},
			{"PatientBirthDate", birthDate(pt.BirthDate)},
			{"LocationGUID", pt.LocationGUID},
			{"PatientStatus", "Active"},
		})
	}
	return out, nil
}
