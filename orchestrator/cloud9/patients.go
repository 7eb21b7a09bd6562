package cloud9

import (
	"context"
	"fmt"
	"strings"
)

// The patient reads of the Node-RED family's lookup endpoints
// (getPatientByFilter).
const (
	ProcGetPortalPatientLookup = "GetPortalPatientLookup"
	ProcGetPatientList         = "GetPatientList"
)

// MaxLookupPageSize is GetPortalPatientLookup's largest pageSize.
const MaxLookupPageSize = 1000

// PatientLookup is GetPortalPatientLookup's input. Filter is "Last, First"
// or a patient id; PageIndex and PageSize are sent only when positive
// (Cloud9's defaults otherwise). PageIndex counts from 1: docs/reference/cloud9-api.md
// does not settle the base, and the production flow sends 1 for the first
// page.
type PatientLookup struct {
	Filter          string
	LookupByPatient bool
	ShowInactive    bool
	PageIndex       int
	PageSize        int
}

// GetPortalPatientLookup finds patients by name or id. No match is a valid
// answer (nil, nil).
func (c *Client) GetPortalPatientLookup(ctx context.Context, q PatientLookup) ([]Record, error) {
	if err := required(ProcGetPortalPatientLookup, map[string]string{"filter": q.Filter}); err != nil {
		return nil, err
	}
	if q.PageSize > MaxLookupPageSize || q.PageSize < 0 || q.PageIndex < 0 {
		return nil, fmt.Errorf("%w: %s: pageIndex must be >= 0 and pageSize at most %d", ErrInvalidInput, ProcGetPortalPatientLookup, MaxLookupPageSize)
	}
	params := []Param{P("filter", strings.TrimSpace(q.Filter)), BitParam("lookupByPatient", q.LookupByPatient),
		BitParam("showInactive", q.ShowInactive)}
	if q.PageIndex > 0 {
		params = append(params, IntParam("pageIndex", q.PageIndex))
	}
	if q.PageSize > 0 {
		params = append(params, IntParam("pageSize", q.PageSize))
	}
	r, err := c.Call(ctx, ProcGetPortalPatientLookup, params...)
	if err != nil {
		return nil, err
	}
	return r.Records, nil
}

// GetPatientList lists the patients of the given locations (LocGUIDs,
// comma-separated; none: every location): PatientGUID, names, … — no
// phone, which only GetPatientInformation answers. An empty list is a
// valid answer (nil, nil).
func (c *Client) GetPatientList(ctx context.Context, locationGUIDs []string) ([]Record, error) {
	r, err := c.Call(ctx, ProcGetPatientList, optional(nil, "LocGUIDs", strings.Join(locationGUIDs, ","))...)
	if err != nil {
		return nil, err
	}
	return r.Records, nil
}
