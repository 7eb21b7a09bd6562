package bookinghttp

import (
	"context"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/booking"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// OperationStatusPath is the operation status endpoint under the base
// path: queued answers' check_status_endpoint names it.
const OperationStatusPath = "/checkOperationStatus"

// FamilyService is what the family handlers need; *booking.Family
// implements it.
type FamilyService interface {
	GetPatient(ctx context.Context, req contracts.GetPatientRequest) booking.Answer
	MalformedPatientRead(err error) booking.Answer
	GetPatientByFilter(ctx context.Context, req contracts.GetPatientByFilterRequest) booking.Answer
	MalformedSearch(err error) booking.Answer
	GetPatientAppts(ctx context.Context, req contracts.GetPatientApptsRequest) booking.Answer
	MalformedAppts(err error) booking.Answer
	EditInsurance(ctx context.Context, req contracts.EditInsuranceRequest) booking.Answer
	ConfirmAppt(ctx context.Context, req contracts.ConfirmApptRequest) booking.Answer
	MalformedResult(err error) booking.Answer
	CancelAppt(ctx context.Context, req contracts.CancelApptRequest) booking.Answer
	MalformedCancel(err error) booking.Answer
	GetLocation(ctx context.Context, req contracts.GetLocationRequest) booking.Answer
	MalformedLocation(err error) booking.Answer
	OperationStatus(ctx context.Context, operationID string) booking.Answer
}

// FamilyHandlers serve the family endpoints.
type FamilyHandlers struct {
	svc FamilyService
	cfg Config
}

// NewFamily returns the family handlers; cfg is as New's (same defaults).
func NewFamily(svc FamilyService, cfg Config) (*FamilyHandlers, error) {
	if svc == nil {
		return nil, errors.New("bookinghttp: nil FamilyService")
	}
	h, err := New(placeholder{}, cfg) // for New's defaults and checks of cfg
	if err != nil {
		return nil, err
	}
	return &FamilyHandlers{svc: svc, cfg: h.cfg}, nil
}

// placeholder lets NewFamily reuse New's configuration defaults; its
// methods are never called.
type placeholder struct{ Service }

// RegisterFamily mounts the family endpoints on r under basePath: the
// rest of the Node-RED family, under the same base path as Register's:
//
//	POST {base}/getPatient            → Family.GetPatient
//	POST {base}/getPatientByFilter    → Family.GetPatientByFilter (phoneNumber or filter)
//	POST {base}/getPatientAppts       → Family.GetPatientAppts
//	POST {base}/editInsurance         → Family.EditInsurance
//	POST {base}/confirmAppt           → Family.ConfirmAppt
//	POST {base}/cancelAppt            → Family.CancelAppt
//	POST {base}/getLocation           → Family.GetLocation (empty body: all locations)
//	GET  {base}/checkOperationStatus  → Family.OperationStatus (?operationId=)
//	GET  {base}/operations/:id        → the same, by path
//
// Like createAppt, every answer is 200 in the endpoint's own shape —
// malformed JSON, wrong types, missing fields and malformed GUIDs included
// (with `error` and an llm_guidance) — except when Cloud9 or the limiter
// could not do the work: 500, as the original; and 503 when flowgate's own
// Redis (phone index, operation queue) failed.
func RegisterFamily(r fiber.Router, f *FamilyHandlers, basePath string) error {
	base, err := NormalizeBasePath(basePath)
	if err != nil {
		return err
	}
	d := deadline(f.cfg)
	r.Post(base+"/getPatient", d, family(f, f.svc.MalformedPatientRead, false, f.svc.GetPatient))
	r.Post(base+"/getPatientByFilter", d, family(f, f.svc.MalformedSearch, false, f.svc.GetPatientByFilter))
	r.Post(base+"/getPatientAppts", d, family(f, f.svc.MalformedAppts, false, f.svc.GetPatientAppts))
	r.Post(base+"/editInsurance", d, family(f, f.svc.MalformedResult, false, f.svc.EditInsurance))
	r.Post(base+"/confirmAppt", d, family(f, f.svc.MalformedResult, false, f.svc.ConfirmAppt))
	r.Post(base+"/cancelAppt", d, family(f, f.svc.MalformedCancel, false, f.svc.CancelAppt))
	r.Post(base+"/getLocation", d, family(f, f.svc.MalformedLocation, true, f.svc.GetLocation))
	r.Get(base+OperationStatusPath, d, func(c *fiber.Ctx) error { return f.status(c, c.Query("operationId")) })
	r.Get(base+"/operations/:operationId", d, func(c *fiber.Ctx) error { return f.status(c, c.Params("operationId")) })
	return nil
}

// family is one POST endpoint: decode Req (a body that is not Req's JSON
// gets malformed's answer), then run.
func family[Req any](f *FamilyHandlers, malformed func(error) booking.Answer, optional bool,
	run func(context.Context, Req) booking.Answer) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req Req
		if err := f.decode(c, &req, optional); err != nil {
			return send(c, malformed(err))
		}
		if ig, ok := any(&req).(interface{ IgnoredFields() []string }); ok && len(ig.IgnoredFields()) > 0 {
			f.cfg.Logger.Debug("request fields of a wrong type ignored; their defaults apply",
				"path", strings.Clone(c.Path()), "fields", ig.IgnoredFields())
		}
		ctx := c.UserContext()
		return sendFamily(c, run(ctx, req))
	}
}

// sendFamily is send, with 503 for a failure of flowgate's own store
// (booking.Unavailable) rather than Cloud9's 500.
func sendFamily(c *fiber.Ctx, a booking.Answer) error {
	if _, ok := a.Body.(booking.Unavailable); ok {
		return c.Status(fiber.StatusServiceUnavailable).JSON(a.Body)
	}
	return send(c, a)
}

func (f *FamilyHandlers) status(c *fiber.Ctx, id string) error {
	ctx := c.UserContext()
	return sendFamily(c, f.svc.OperationStatus(ctx, strings.TrimSpace(id)))
}

// decode reads the body into v as Handlers.decode does: identity encoding,
// at most MaxBody bytes, one JSON value; optional: an empty body leaves v.
func (f *FamilyHandlers) decode(c *fiber.Ctx, v any, optional bool) error {
	body, err := web.PlainBody(c)
	if err != nil {
		return err
	}
	if len(body) > f.cfg.MaxBody {
		return contracts.Errorf(contracts.CodeInvalid, "request body is %d bytes; at most %d are accepted", len(body), f.cfg.MaxBody)
	}
	if optional && len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	return contracts.DecodeJSON(body, v)
}
