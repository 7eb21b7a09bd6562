package booking

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/slots"
)

// Limits of the slot answers.
const (
	maxVoiceSlots      = 5
	maxGroups          = 10
	maxGroupedPatients = 10
	maxTimeWindow      = 240
)

// ApptSlotsDays is getApptSlots' span: startDate to startDate + 30 days,
// whatever endDate says. The original never sends endDate to Cloud9
// (docs/reference/nodered-endpoints.md §1.4) and the voice assistant's prompts were tuned on its
// month of slots (a narrower endDate gave 66 slots where it gave 288).
const ApptSlotsDays = 30

// GetApptSlots is POST getApptSlots (docs/reference/nodered-endpoints.md §1.4): the SlotSource's
// slots of ApptSlotsDays from startDate minus those another session holds
// (docs/holds.md#the-hold-engine), each with its bookingToken, the first five as voiceSlots,
// and llm_guidance. Nothing found, or Cloud9 failing, is the 200 no-slots
// answer (transfer_reason no_slots_after_retries — no_slots when no retry
// was made —, timeout or api_error).
func (s *Service) GetApptSlots(ctx context.Context, req contracts.GetApptSlotsRequest) Answer {
	q := s.slotQuery(req.StartDate, "", ApptSlotsDays, req.ScheduleViewGUIDs, holder(req.SessionID, req.UUI))
	resp := contracts.GetApptSlotsResponse{Slots: []contracts.ApptSlot{}, VoiceSlots: []contracts.VoiceSlot{},
		SearchRange: contracts.SearchRange{StartDate: q.StartDate, EndDate: q.EndDate}}
	answer := func(g contracts.SlotsGuidance, outcome string) Answer {
		g.Timestamp = contracts.JSTime(s.cfg.Now())
		resp.LLMGuidance = g
		s.count("getApptSlots", outcome)
		return ok(resp)
	}
	if s.d.Slots == nil {
		return answer(contracts.NewNoSlotsGuidance(contracts.TransferAPIError), "error")
	}
	res, err := s.d.Slots.Slots(ctx, q)
	if err != nil {
		s.log.Warn("slot search failed", "err", err)
		return answer(contracts.NewNoSlotsGuidance(transferReason(err)), "error")
	}
	if res.SearchRange != (contracts.SearchRange{}) {
		resp.SearchRange = res.SearchRange
	}
	resp.Attempts, resp.Retries, resp.Expanded = res.Attempts, res.Retries, res.Expanded
	slots := s.withTokens(s.unheld(ctx, q.SessionID, res.Slots))
	if len(slots) == 0 {
		return answer(contracts.NewNoSlotsGuidance(contracts.NoSlotsReason(res.Retries)), "no_slots")
	}
	resp.Slots, resp.Count = slots, len(slots)
	for i := 0; i < len(slots) && i < maxVoiceSlots; i++ {
		resp.VoiceSlots = append(resp.VoiceSlots, contracts.NewVoiceSlot(slots[i]))
	}
	return answer(contracts.NewSlotsGuidance(slots[0]), "ok")
}

// GetGroupedApptSlots is POST getGroupedApptSlots (docs/reference/nodered-endpoints.md §1.5):
// numberOfPatients consecutive slots within timeWindowMinutes of each
// other, the top 10 groups, and a booking_plan from the first group (or
// the first N single slots). Groups containing a slot another session holds
// are dropped. Cloud9 failing is the error answer with the transfer
// guidance (groups [], error true) and HTTP 500, as the original
// (docs/reference/nodered-endpoints.md §1.5 "500").
func (s *Service) GetGroupedApptSlots(ctx context.Context, req contracts.GetGroupedApptSlotsRequest) Answer {
	n, window := int(req.NumberOfPatients), int(req.TimeWindowMinutes)
	if n <= 0 {
		n = DefaultGroupedPatients
	}
	if window <= 0 {
		window = DefaultTimeWindowMinutes
	}
	n, window = min(n, maxGroupedPatients), min(window, maxTimeWindow)
	q := GroupQuery{SlotQuery: s.slotQuery(req.StartDate, req.EndDate, 0, req.ScheduleViewGUIDs, holder(req.SessionID, req.UUI)),
		NumberOfPatients: n, TimeWindowMinutes: window}
	resp := contracts.GroupedSlotsResponse{Groups: []contracts.SlotGroup{}, Slots: []contracts.ApptSlot{},
		NumberOfPatients: n, TimeWindowMinutes: window, TierBased: true, TiersSearched: []int{},
		CacheDecision: contracts.CacheDecision{Tiers: map[string]contracts.TierCheck{}},
		SearchRange:   groupedRange(contracts.SearchRange{StartDate: q.StartDate, EndDate: q.EndDate}, q.EndDate)}
	var res GroupSearch
	err := errors.New("no slot source configured")
	if s.d.Slots != nil {
		res, err = s.d.Slots.GroupedSlots(ctx, q)
	}
	if err != nil {
		s.log.Warn("grouped slot search failed", "err", err)
		resp.Error, resp.BookingMode = true, contracts.BookingModeNone
		if res.CacheDecision != nil {
			resp.CacheDecision = *res.CacheDecision
		}
		resp.LLMGuidance = contracts.NewGroupedErrorGuidance(transferReason(err))
		resp.LLMGuidance.Timestamp = contracts.JSTime(s.cfg.Now())
		s.count("getGroupedApptSlots", "error")
		return failed(resp)
	}
	s.groupedSource(&resp, res, q.EndDate)

	held := s.heldSet(ctx, q.SessionID, res.Slots)
	slots := s.withTokens(dropHeld(sortSlots(res.Slots), held))
	var groups [][]contracts.ApptSlot
	if res.Groups != nil {
		for _, g := range res.Groups {
			if len(dropHeld(g, held)) == len(g) {
				groups = append(groups, s.withTokens(g))
			}
		}
	} else {
		groups = groupSlots(slots, n, window, s.cfg.DefaultMinutes)
	}
	for i := 0; i < len(groups) && i < maxGroups; i++ {
		resp.Groups = append(resp.Groups, contracts.NewSlotGroup(groups[i]))
	}
	resp.TotalGroups, resp.Slots, resp.TotalSlots = len(groups), slots, len(slots)
	switch {
	case len(groups) > 0:
		resp.BookingMode = contracts.BookingModeConsecutive
		resp.LLMGuidance = contracts.NewGroupedGuidance(resp.BookingMode, n, contracts.NewBookingPlan(groups[0]))
	case len(slots) >= n:
		resp.BookingMode = contracts.BookingModeIndividual
		resp.LLMGuidance = contracts.NewGroupedGuidance(resp.BookingMode, n, contracts.NewBookingPlan(slots[:n]))
	default:
		resp.BookingMode = contracts.BookingModeNone
		resp.LLMGuidance = contracts.NewGroupedGuidance(resp.BookingMode, n, nil)
		resp.LLMGuidance.TransferReason = contracts.NoSlotsReason(res.Retries)
	}
	resp.LLMGuidance.Timestamp = contracts.JSTime(s.cfg.Now())
	s.count("getGroupedApptSlots", resp.BookingMode)
	return ok(resp)
}

// groupedSource copies the search's range, tiers and cache metadata.
func (s *Service) groupedSource(resp *contracts.GroupedSlotsResponse, res GroupSearch, endDate string) {
	if res.SearchRange != (contracts.SearchRange{}) {
		resp.SearchRange = groupedRange(res.SearchRange, endDate)
	}
	resp.Tier, resp.FromCache, resp.CacheSource = res.Tier, res.FromCache, contracts.NullString(res.CacheSource)
	if res.TiersSearched != nil {
		resp.TiersSearched = res.TiersSearched
	}
	if res.CacheDecision != nil {
		resp.CacheDecision = *res.CacheDecision
	}
	resp.CacheInfo = res.CacheInfo
}

// groupedRange is the grouped answer's searchRange: the window r
// searched, also as start / end (the original's spelling), and endDate as
// the request gave it (endDate: its normalized endDate, "" → null).
func groupedRange(r contracts.SearchRange, endDate string) contracts.GroupedSearchRange {
	return contracts.GroupedSearchRange{StartDate: r.StartDate, EndDate: contracts.NullString(endDate),
		Start: r.StartDate, End: r.EndDate}
}

// slotQuery normalises the dates: a missing, unreadable or past startDate
// becomes tomorrow in the practice's zone (slots.Tomorrow). With span > 0
// the query ends span days after startDate whatever end says
// (getApptSlots); with span 0 end is kept when readable and not before
// startDate.
func (s *Service) slotQuery(start, end string, span int, views []string, session string) SlotQuery {
	tomorrow := slots.Tomorrow(s.cfg.Now(), s.cfg.PracticeZone)
	sd, ok := parseDate(start)
	if !ok || sd.Before(tomorrow) {
		sd = tomorrow
	}
	q := SlotQuery{StartDate: sd.Format("01/02/2006"), ScheduleViewGUIDs: views, SessionID: session}
	if span > 0 {
		q.EndDate = sd.AddDate(0, 0, span).Format("01/02/2006")
	} else if ed, ok := parseDate(end); ok && !ed.Before(sd) {
		q.EndDate = ed.Format("01/02/2006")
	}
	return q
}

// parseDate reads a request's date as midnight labelled UTC (the dates of
// package slots).
func parseDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"1/2/2006", "2006-01-02", "1/2/2006 3:04:05 PM", "1/2/2006 3:04 PM", time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), true
		}
	}
	return time.Time{}, false
}

func transferReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) || cloud9.ClassOf(err) == cloud9.ClassTimeout {
		return contracts.TransferTimeout
	}
	return contracts.TransferAPIError
}

// heldSet asks the reservations which slots other sessions hold (fail
// open: none).
func (s *Service) heldSet(ctx context.Context, session string, slots []contracts.ApptSlot) map[string]bool {
	held := map[string]bool{}
	if s.d.Reservations == nil || len(slots) == 0 {
		return held
	}
	holds := make([]SlotHold, len(slots))
	for i, sl := range slots {
		holds[i] = SlotHold{LocationGUID: firstNonEmpty(sl.LocationGUID, s.cfg.LocationGUID), StartTime: sl.StartTime,
			ScheduleColumnGUID: sl.ScheduleColumnGUID}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RedisTimeout) // fail open past it (budget.go)
	defer cancel()
	flags, err := s.d.Reservations.HeldByOthers(ctx, session, holds)
	if err != nil || len(flags) != len(slots) {
		if err != nil {
			s.log.Warn("slot reservations unavailable; not filtering (fail open)", "err", err)
		}
		return held
	}
	for i, f := range flags {
		if f {
			held[slotKey(slots[i].StartTime, slots[i].ScheduleColumnGUID)] = true
		}
	}
	return held
}

func (s *Service) unheld(ctx context.Context, session string, slots []contracts.ApptSlot) []contracts.ApptSlot {
	return dropHeld(slots, s.heldSet(ctx, session, slots))
}

func dropHeld(slots []contracts.ApptSlot, held map[string]bool) []contracts.ApptSlot {
	out := make([]contracts.ApptSlot, 0, len(slots))
	for _, sl := range slots {
		if !held[slotKey(sl.StartTime, sl.ScheduleColumnGUID)] {
			out = append(out, sl)
		}
	}
	return out
}

// withTokens sets each slot's bookingToken (left empty without
// BookingTokens or when encoding fails).
func (s *Service) withTokens(slots []contracts.ApptSlot) []contracts.ApptSlot {
	out := make([]contracts.ApptSlot, len(slots))
	for i, sl := range slots {
		if s.d.BookingTokens != nil && sl.BookingToken == "" {
			tok, err := s.d.BookingTokens.Encode(SlotRef{StartTime: sl.StartTime, ScheduleViewGUID: sl.ScheduleViewGUID,
				ScheduleColumnGUID: sl.ScheduleColumnGUID, AppointmentTypeGUID: firstNonEmpty(sl.AppointmentTypeGUID, s.cfg.DefaultAppointmentTypeGUID),
				Minutes: sl.MinutesInt()})
			if err == nil {
				sl.BookingToken = tok
			}
		}
		out[i] = sl
	}
	return out
}

// sortSlots orders slots by start time (unreadable ones last, stable).
func sortSlots(slots []contracts.ApptSlot) []contracts.ApptSlot {
	out := append([]contracts.ApptSlot(nil), slots...)
	sort.SliceStable(out, func(i, j int) bool {
		a, aok := contracts.ParseStartTime(out[i].StartTime)
		b, bok := contracts.ParseStartTime(out[j].StartTime)
		switch {
		case aok && bok:
			return a.Before(b)
		default:
			return aok && !bok
		}
	})
	return out
}

// groupSlots is docs/reference/nodered-endpoints.md §1.5's rule on sorted slots: from each slot,
// greedily add later slots whose start is 0..window minutes after the
// previous slot's end (start + Minutes, default defMinutes); keep groups of
// exactly n. Groups may overlap.
func groupSlots(slots []contracts.ApptSlot, n, window, defMinutes int) [][]contracts.ApptSlot {
	type timed struct {
		s          contracts.ApptSlot
		start, end time.Time
	}
	var ts []timed
	for _, sl := range slots {
		st, ok := contracts.ParseStartTime(sl.StartTime)
		if !ok {
			continue
		}
		m := sl.MinutesInt()
		if m <= 0 {
			m = defMinutes
		}
		ts = append(ts, timed{s: sl, start: st, end: st.Add(time.Duration(m) * time.Minute)})
	}
	var groups [][]contracts.ApptSlot
	for i := range ts {
		g := []contracts.ApptSlot{ts[i].s}
		prevEnd := ts[i].end
		for j := i + 1; j < len(ts) && len(g) < n; j++ {
			gap := ts[j].start.Sub(prevEnd)
			if gap < 0 {
				continue
			}
			if gap > time.Duration(window)*time.Minute {
				break
			}
			g = append(g, ts[j].s)
			prevEnd = ts[j].end
		}
		if len(g) == n {
			groups = append(groups, g)
		}
	}
	return groups
}
