package main

import "log/slog"

// retiredSetting is a variable an earlier version read and this one does
// not: set, it changes nothing, so the start log and `flowgate check` say
// so instead of ignoring it silently (CHANGELOG.md has the release notes).
type retiredSetting struct {
	name    string
	instead string // what replaced it, or why nothing did
}

// retiredSettings are every variable flowgate stopped reading.
var retiredSettings = []retiredSetting{
	{"PHONE_INDEX_CONCURRENCY", "PHONE_SEARCH_CONCURRENCY (the phone search reads Cloud9 per search; docs/booking.md)"},
	{"PHONE_INDEX_REFRESH", "nothing: no background phone index; each search reads Cloud9, at most PHONE_SEARCH_READS records"},
	{"PHONE_INDEX_MISS_REFRESH", "nothing: no background phone index; records read are kept PHONE_SEARCH_RECORD_MAX_AGE"},
	{"PHONE_INDEX_DEADLINE", "nothing: no background phone index; PHONE_SEARCH_READS_PER_MINUTE bounds the reads"},
	{"PHONE_INDEX_MAX_PATIENTS", "PHONE_SEARCH_READS (the most records one search reads)"},
}

// retiredInEnv are the retired variables getenv has a value for.
func retiredInEnv(getenv func(string) string) []retiredSetting {
	var set []retiredSetting
	for _, r := range retiredSettings {
		if getenv(r.name) != "" {
			set = append(set, r)
		}
	}
	return set
}

// warnRetired logs one warning per retired variable that is set.
func warnRetired(log *slog.Logger, getenv func(string) string) {
	for _, r := range retiredInEnv(getenv) {
		log.Warn("setting no longer read: it changes nothing", "setting", r.name, "instead", r.instead)
	}
}
