package booking

import (
	"context"
	"strings"

	"github.com/flowgate/flowgate/contracts"
)

// GetLocation answers getLocation: with locationGUID the one location
// ({success, location, matchType "guid"}), without it all of them
// ({success, locations, count, location} — location being the configured
// practice location, else the first).
func (f *Family) GetLocation(ctx context.Context, req contracts.GetLocationRequest) Answer {
	want := strings.TrimSpace(req.LocationGUID)
	if want != "" && !guidRE.MatchString(want) {
		return ok(contracts.LocationResponse{Error: "locationGUID is not a GUID", LLMGuidance: famInvalid("locationGUID")})
	}
	recs, err := f.d.Cloud9.GetLocations(ctx)
	if err != nil {
		f.log.Warn("getLocation failed", "err", err)
		return failed(contracts.LocationResponse{Error: famMessage(err), LLMGuidance: famFailedGuidance(err)})
	}
	all := make([]contracts.Record, 0, len(recs))
	var home contracts.Record
	for _, r := range recs {
		rec := famRecord(r)
		all = append(all, rec)
		g := r.Get("LocationGUID")
		if want != "" && strings.EqualFold(g, want) {
			return ok(contracts.LocationResponse{Success: true, Location: rec, MatchType: "guid"})
		}
		if strings.EqualFold(g, f.cfg.LocationGUID) {
			home = rec
		}
	}
	if want != "" {
		return ok(contracts.LocationResponse{Error: "no location " + want, LLMGuidance: famNotFound("location")})
	}
	if home == nil && len(all) > 0 {
		home = all[0]
	}
	n := len(all)
	return ok(contracts.LocationResponse{Success: true, Locations: all, Count: &n, Location: home})
}

// MalformedLocation answers getLocation's body that is not its JSON.
func (f *Family) MalformedLocation(err error) Answer {
	return ok(contracts.LocationResponse{Error: MalformedText(err), LLMGuidance: famInvalid("")})
}
