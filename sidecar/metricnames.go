package main

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// metricRenames maps the names some parts register their series under to
// the flowgate_ name /metrics exposes, so that every flowgate series sits
// under one prefix (the libraries' own keep theirs: go_, process_,
// promhttp_, asynq_). The old name is exposed too, unchanged but for its
// help, as a deprecated alias (CHANGELOG.md, 2026-11-29): dashboards and
// alert rules written against it keep working while they move
// (docs/operations.md, "Metrics"). When the aliases go, the parts register
// the new names themselves and this table goes with them.
var metricRenames = map[string]string{
	"http_requests_total":                    "flowgate_http_requests_total",
	"http_request_duration_seconds":          "flowgate_http_request_duration_seconds",
	"holdstream_streams":                     "flowgate_holdstream_streams",
	"holdstream_streams_ended_total":         "flowgate_holdstream_streams_ended_total",
	"holdstream_events_undecodable_total":    "flowgate_holdstream_events_undecodable_total",
	"holdstream_fanout_seconds":              "flowgate_holdstream_fanout_seconds",
	"holdstream_memory_releases_total":       "flowgate_holdstream_memory_releases_total",
	"buffer_flowgate_dlq_size":               "flowgate_buffer_dlq_size",
	"buffer_flowgate_dlq_recorded_total":     "flowgate_buffer_dlq_recorded_total",
	"buffer_flowgate_dlq_archive_fill_ratio": "flowgate_buffer_dlq_archive_fill_ratio",
}

// renamingGatherer exposes each family of metricRenames under its new
// name and, marked deprecated, under its old one.
type renamingGatherer struct{ prometheus.Gatherer }

// Gather implements prometheus.Gatherer.
func (g renamingGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.Gatherer.Gather()
	out := make([]*dto.MetricFamily, 0, len(mfs)+len(metricRenames))
	for _, mf := range mfs {
		name, ok := metricRenames[mf.GetName()]
		if !ok {
			out = append(out, mf)
			continue
		}
		renamed, _ := proto.Clone(mf).(*dto.MetricFamily)
		renamed.Name = proto.String(name)
		mf.Help = proto.String(mf.GetHelp() + " Deprecated alias of " + name + ", removed in the next release.")
		out = append(out, renamed, mf)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, err
}
