package shadow

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// MaxRecent bounds the recent differences an endpoint's view shows.
const MaxRecent = 10

// Verdict judges one endpoint's records: no_traffic before the first
// comparison; not_ready while the window holds a missing key path or a
// type mismatch; collecting below minCalls comparisons; ready otherwise.
// Value differences (the caller-relevant fields) are shown, not judged:
// the original and flowgate read Cloud9 at different moments, and a slot
// taken in between is no fault of either.
func Verdict(rec Records, minCalls int) string {
	if rec.Counts[cCompared] == 0 {
		return contracts.ShadowNoTraffic
	}
	for _, r := range rec.Recent {
		if r.MissingCount > 0 || r.TypeCount > 0 {
			return contracts.ShadowNotReady
		}
	}
	if rec.Counts[cCompared] < int64(minCalls) {
		return contracts.ShadowCollecting
	}
	return contracts.ShadowReady
}

// GroupVerdict is a group's verdict from its members': not_ready if one
// is, ready only if all are, no_traffic if none has any, else collecting.
func GroupVerdict(members []string) string {
	all, none := true, true
	for _, v := range members {
		switch v {
		case contracts.ShadowNotReady:
			return contracts.ShadowNotReady
		case contracts.ShadowReady:
			none = false
		case contracts.ShadowNoTraffic:
			all = false
		default:
			all, none = false, false
		}
	}
	switch {
	case all:
		return contracts.ShadowReady
	case none:
		return contracts.ShadowNoTraffic
	}
	return contracts.ShadowCollecting
}

// Report is every endpoint's and group's parity.
func (r *Recorder) Report(ctx context.Context) (contracts.ShadowReport, error) {
	names := make([]string, len(Endpoints))
	for i, e := range Endpoints {
		names[i] = e.Name
	}
	recs, err := r.Load(ctx, names)
	if err != nil {
		return contracts.ShadowReport{}, err
	}
	rep := contracts.ShadowReport{GeneratedAt: r.cfg.Now().UTC().Format(time.RFC3339),
		Settings: contracts.ShadowSettings{ReadyMinCalls: r.cfg.ReadyMinCalls, ReadyWindow: r.cfg.ReadyWindow},
		Groups:   []contracts.ShadowGroup{}, Endpoints: make([]contracts.ShadowEndpointView, 0, len(recs))}
	verdicts := map[string]string{}
	for i, rec := range recs {
		v := View(Endpoints[i], rec, r.cfg.ReadyMinCalls)
		verdicts[v.Endpoint] = v.Verdict
		rep.Endpoints = append(rep.Endpoints, v)
	}
	seen := map[string]bool{}
	for _, e := range Endpoints {
		if e.Group == "" || seen[e.Group] {
			continue
		}
		seen[e.Group] = true
		m := Members(e.Group)
		vs := make([]string, len(m))
		for i, n := range m {
			vs[i] = verdicts[n]
		}
		rep.Groups = append(rep.Groups, contracts.ShadowGroup{Name: e.Group, Endpoints: m, Verdict: GroupVerdict(vs)})
	}
	return rep, nil
}

// View is one endpoint's part of the report.
func View(e Endpoint, rec Records, minCalls int) contracts.ShadowEndpointView {
	c := rec.Counts
	v := contracts.ShadowEndpointView{Endpoint: e.Name, Group: e.Group, Verdict: Verdict(rec, minCalls),
		Compared: c[cCompared], Identical: c[cIdentical], Superset: c[cSuperset], MissingPaths: c[cMissing],
		TypeMismatches: c[cTypes], ValueDiffs: c[cValues], Dropped: c[cDropped],
		Latency: map[string]contracts.ShadowLatency{}, Fields: fieldCounts(c), Recent: []contracts.ShadowDifference{}}
	if !e.Shadowed {
		v.Verdict = contracts.ShadowNever
	}
	orig, fg := make([]float64, 0, len(rec.Recent)), make([]float64, 0, len(rec.Recent))
	for _, r := range rec.Recent {
		v.Window.Calls++
		if r.MissingCount > 0 {
			v.Window.MissingPaths++
		}
		if r.TypeCount > 0 {
			v.Window.TypeMismatches++
		}
		if len(r.Fields) > 0 {
			v.Window.ValueDiffs++
		}
		orig, fg = append(orig, r.OriginalMS), append(fg, r.FlowgateMS)
		if (r.MissingCount > 0 || r.TypeCount > 0 || len(r.Fields) > 0) && len(v.Recent) < MaxRecent {
			d := contracts.ShadowDifference{At: r.At.UTC().Format(time.RFC3339), OriginalStatus: r.OriginalStatus,
				FlowgateStatus: r.FlowgateStatus, Missing: r.Missing, TypeMismatches: r.TypeMismatches}
			for _, f := range r.Fields {
				d.Fields = append(d.Fields, contracts.ShadowFieldDiff(f))
			}
			v.Recent = append(v.Recent, d)
		}
	}
	if len(orig) > 0 {
		v.Latency["original"] = contracts.ShadowLatency{P50: percentile(orig, 0.50), P99: percentile(orig, 0.99)}
		v.Latency["flowgate"] = contracts.ShadowLatency{P50: percentile(fg, 0.50), P99: percentile(fg, 0.99)}
	}
	return v
}

// percentile is the nearest-rank percentile of xs (sorted in place),
// rounded to 0.1 ms.
func percentile(xs []float64, p float64) float64 {
	sort.Float64s(xs)
	i := int(math.Ceil(p*float64(len(xs)))) - 1
	i = max(0, min(i, len(xs)-1))
	return math.Round(xs[i]*10) / 10
}
