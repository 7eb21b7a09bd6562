package main

import (
	"time"

	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
)

// FamilyConfig holds the settings of the rest of the Node-RED family
// (booking_family.go): the phone index of getPatientByFilter and the
// practice's time zone.
type FamilyConfig struct {
	PhoneRefresh     time.Duration
	PhoneMissRefresh time.Duration
	PhoneConcurrency int
	PhoneDeadline    time.Duration
	PhoneMaxPatients int
	PracticeZone     *time.Location
}

func familyDuration(dst func(*FamilyConfig) *time.Duration) func(*Config, string) error {
	return duration(func(c *Config) *time.Duration { return dst(&c.Family) })
}

func familyInt(dst func(*FamilyConfig) *int, min, max int) func(*Config, string) error {
	return integer(func(c *Config) *int { return dst(&c.Family) }, min, max)
}

// familySettings are the family's variables.
var familySettings = []setting{
	{name: "PHONE_INDEX_REFRESH", def: durStr(phoneindex.DefaultRefreshEvery), help: "getPatientByFilter's phone index is rebuilt in the background this often (once across instances); a lookup on an older index triggers one background rebuild",
		apply: familyDuration(func(f *FamilyConfig) *time.Duration { return &f.PhoneRefresh })},
	{name: "PHONE_INDEX_MISS_REFRESH", def: durStr(phoneindex.DefaultMissRefreshAge), help: "a phone lookup that matches nothing in an index at least this old rebuilds it in the request first (a patient created since)",
		apply: familyDuration(func(f *FamilyConfig) *time.Duration { return &f.PhoneMissRefresh })},
	{name: "PHONE_INDEX_CONCURRENCY", def: itoa(phoneindex.DefaultConcurrency), help: "most GetPatientInformation calls in flight while the phone index is rebuilt",
		apply: familyInt(func(f *FamilyConfig) *int { return &f.PhoneConcurrency }, 1, 64)},
	{name: "PHONE_INDEX_DEADLINE", def: durStr(phoneindex.DefaultDeadline), help: "a rebuild stops after this long and merges what it fetched",
		apply: familyDuration(func(f *FamilyConfig) *time.Duration { return &f.PhoneDeadline })},
	{name: "PHONE_INDEX_MAX_PATIENTS", def: itoa(phoneindex.DefaultMaxPatients), help: "most patients one rebuild indexes (the original read 200 per call)",
		apply: familyInt(func(f *FamilyConfig) *int { return &f.PhoneMaxPatients }, 1, 1_000_000)},
}
