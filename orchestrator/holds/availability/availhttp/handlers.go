package availhttp

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/orchestrator/holds/availability"
	"github.com/flowgate/flowgate/orchestrator/slots"
	"github.com/flowgate/flowgate/orchestrator/valutil"
	"github.com/flowgate/flowgate/orchestrator/web"
)

// Hold is the hold engine's holds.Hold (docs/holds.md).
type Hold = holds.Hold

// ActiveHolds lists the active holds of an appointment type (the hold
// engine's Engine.Active).
type ActiveHolds interface {
	Active(ctx context.Context, appointmentTypeID string) ([]Hold, error)
}

// Defaults of Config.
const (
	DefaultDays           = 7
	DefaultRequestTimeout = 2 * time.Second
)

// Config configures the handlers.
type Config struct {
	Catalog *availability.Catalog // required
	Holds   ActiveHolds           // optional: nothing is filtered without it
	// Admin guards the admin endpoints (basic auth with the monitoring
	// credentials in the sidecar). Nil leaves them open: only for tests
	// and the embedded trial.
	Admin fiber.Handler
	// RequestTimeout is each request's deadline (web.Deadline, after
	// Admin): the Redis work of one request. Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// Handlers serves the endpoints.
type Handlers struct{ cfg Config }

// New checks cfg.
func New(cfg Config) (*Handlers, error) {
	if cfg.Catalog == nil {
		return nil, errors.New("availhttp: Catalog is required")
	}
	cfg.RequestTimeout = valutil.PositiveOrDefault(cfg.RequestTimeout, DefaultRequestTimeout)
	cfg.Logger = valutil.ValOrDefault(cfg.Logger, slog.Default())
	return &Handlers{cfg: cfg}, nil
}

// Register adds the routes to r.
func Register(r fiber.Router, h *Handlers) {
	d := web.Deadline(h.cfg.RequestTimeout)
	r.Get("/v1/appointment-types", d, h.appointmentTypes)
	r.Get("/v1/appointment-types/:id/timeslots", d, h.timeslots)
	admin := r.Group("/v1/admin/availability")
	if h.cfg.Admin != nil {
		admin.Use(h.cfg.Admin)
	}
	admin.Get("/schedule", d, h.schedule)
	admin.Put("/specialists/:specialistId/weekly-hours", d, h.putWeeklyHours)
	admin.Put("/specialists/:specialistId/overrides/:date", d, h.putOverride)
	admin.Delete("/specialists/:specialistId/overrides/:date", d, h.deleteOverride)
	admin.Delete("/specialists/:specialistId", d, h.deleteSpecialist)
	admin.Put("/appointment-types/:id", d, h.putAppointmentType)
}

// AppointmentTypesResponse is GET /v1/appointment-types.
type AppointmentTypesResponse struct {
	AppointmentTypes []availability.AppointmentType `json:"appointmentTypes"`
}

func (h *Handlers) appointmentTypes(c *fiber.Ctx) error {
	ctx := c.UserContext()
	types, err := h.cfg.Catalog.AppointmentTypes(ctx)
	if err != nil {
		return err
	}
	if types == nil {
		types = []availability.AppointmentType{}
	}
	return c.JSON(AppointmentTypesResponse{AppointmentTypes: types})
}

// Slot is one timeslot of the answer: the specialists free at it (holds
// of other clients removed), those another client holds and, with
// includeHeld, those booked through /v1 (omitted otherwise).
type Slot struct {
	SlotStartDate       time.Time `json:"slotStartDate"`
	SlotEndDate         time.Time `json:"slotEndDate"`
	SpecialistIDs       []string  `json:"specialistIds"`
	HeldSpecialistIDs   []string  `json:"heldSpecialistIds"`
	BookedSpecialistIDs []string  `json:"bookedSpecialistIds,omitempty"`
}

// TimeslotsResponse is GET /v1/appointment-types/{id}/timeslots.
type TimeslotsResponse struct {
	AppointmentTypeID string                    `json:"appointmentTypeId"`
	TimeZone          string                    `json:"timeZone"`
	From              string                    `json:"from"`
	Days              int                       `json:"days"`
	Specialists       []availability.Specialist `json:"specialists"`
	Slots             []Slot                    `json:"slots"`
	Cached            bool                      `json:"cached"`
}

// timeslotParams reads the query: from (YYYY-MM-DD), days, includeHeld.
func (h *Handlers) timeslotParams(c *fiber.Ctx) (availability.TimeslotQuery, bool, error) {
	q := availability.TimeslotQuery{AppointmentTypeID: strings.Clone(c.Params("id")), Days: DefaultDays,
		SpecialistID: strings.Clone(c.Query("specialistId"))}
	if s := c.Query("from"); s != "" {
		d, err := availability.ParseDate(s)
		if err != nil {
			return q, false, invalidParam("from", "from must be a date YYYY-MM-DD, got %s", quote(s))
		}
		q.From = d
	}
	if s := c.Query("days"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > h.cfg.Catalog.MaxDays() {
			return q, false, invalidParam("days", "days must be an integer 1..%d, got %s", h.cfg.Catalog.MaxDays(), quote(s))
		}
		q.Days = n
	}
	includeHeld := false
	if s := c.Query("includeHeld"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return q, false, invalidParam("includeHeld", "includeHeld must be true or false, got %s", quote(s))
		}
		includeHeld = b
	}
	return q, includeHeld, nil
}

func (h *Handlers) timeslots(c *fiber.Ctx) error {
	q, includeHeld, err := h.timeslotParams(c)
	if err != nil {
		return err
	}
	clientID := c.Query("clientId")
	ctx := c.UserContext()
	ts, err := h.cfg.Catalog.Timeslots(ctx, q)
	if err != nil {
		return err
	}
	held := h.heldByOthers(ctx, ts.Type.ID, clientID)
	resp := TimeslotsResponse{AppointmentTypeID: ts.Type.ID, TimeZone: ts.TimeZone, From: ts.From.Format(availability.DateLayout),
		Days: ts.Days, Specialists: ts.Specialists, Slots: make([]Slot, 0, len(ts.Slots)), Cached: ts.Cached}
	for _, s := range ts.Slots {
		out := Slot{SlotStartDate: s.SlotStartDate, SlotEndDate: s.SlotEndDate, SpecialistIDs: []string{}, HeldSpecialistIDs: []string{}}
		for _, id := range s.SpecialistIDs {
			if held[heldKey{s.SlotStartDate.Unix(), id}] {
				out.HeldSpecialistIDs = append(out.HeldSpecialistIDs, id)
			} else {
				out.SpecialistIDs = append(out.SpecialistIDs, id)
			}
		}
		if len(out.SpecialistIDs) > 0 || includeHeld {
			resp.Slots = append(resp.Slots, out)
		}
	}
	if includeHeld {
		resp.Slots = h.withBooked(ctx, ts, resp.Slots)
	}
	return c.JSON(resp)
}

// withBooked adds the window's /v1 bookings of the type to slots (a booked
// start gets its own entry when no specialist is free or held at it), in
// start order. The store failing, the slots are answered without them
// (logged): the board then shows those cells empty, never wrong.
func (h *Handlers) withBooked(ctx context.Context, ts availability.Timeslots, list []Slot) []Slot {
	loc, err := time.LoadLocation(ts.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	from, to := slots.WallInstant(loc, ts.From, 0), slots.WallInstant(loc, ts.From.AddDate(0, 0, ts.Days), 0)
	appts, err := h.cfg.Catalog.Booked(ctx, ts.Type.ID, from, to)
	if err != nil {
		h.cfg.Logger.Warn("timeslots: booked appointments unavailable", "appointmentTypeId", ts.Type.ID, "err", err)
		return list
	}
	at := make(map[int64]int, len(list))
	for i, s := range list {
		at[s.SlotStartDate.Unix()] = i
	}
	for _, a := range appts {
		i, ok := at[a.SlotStartDate.Unix()]
		if !ok {
			list = append(list, Slot{SlotStartDate: a.SlotStartDate, SlotEndDate: a.SlotEndDate,
				SpecialistIDs: []string{}, HeldSpecialistIDs: []string{}})
			i = len(list) - 1
			at[a.SlotStartDate.Unix()] = i
		}
		list[i].BookedSpecialistIDs = append(list[i].BookedSpecialistIDs, a.SpecialistID)
	}
	slices.SortStableFunc(list, func(a, b Slot) int { return a.SlotStartDate.Compare(b.SlotStartDate) })
	return list
}

type heldKey struct {
	start      int64
	specialist string
}

// heldByOthers is the set of (start, specialist) other clients hold. The
// hold engine failing, nothing is filtered (fail open, logged, like the
// IVA face's reservation filter): a claim still refuses a held slot.
func (h *Handlers) heldByOthers(ctx context.Context, typeID, clientID string) map[heldKey]bool {
	out := map[heldKey]bool{}
	if h.cfg.Holds == nil {
		return out
	}
	list, err := h.cfg.Holds.Active(ctx, typeID)
	if err != nil {
		h.cfg.Logger.Warn("timeslots: active holds unavailable; answering unfiltered", "appointmentTypeId", typeID, "err", err)
		return out
	}
	for _, hd := range list {
		if clientID == "" || hd.ClientID != clientID {
			out[heldKey{hd.SlotStartDate.Unix(), hd.SpecialistID}] = true
		}
	}
	return out
}

func invalidParam(name, format string, args ...any) *contracts.Error {
	return contracts.FieldErrorf(contracts.CodeInvalid, name, format, args...)
}

// quote quotes a client value for a message, cut to 64 bytes.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

// decode decodes the JSON body into v (web.PlainBody refuses a compressed one).
func decode(c *fiber.Ctx, v any) error {
	b, err := web.PlainBody(c)
	if err != nil {
		return err
	}
	return contracts.DecodeJSON(b, v)
}
