package main

import (
	"time"

	"github.com/flowgate/flowgate/orchestrator/booking/phoneindex"
)

// FamilyConfig holds the settings of the rest of the Node-RED family
// (booking_family.go): getPatientByFilter's phone search and the
// practice's time zone.
type FamilyConfig struct {
	PhoneReadsPerSearch int
	PhoneReadsPerMinute int
	PhoneConcurrency    int
	PhoneRecordMaxAge   time.Duration
	PracticeZone        *time.Location
}

func familyDuration(dst func(*FamilyConfig) *time.Duration) func(*Config, string) error {
	return duration(func(c *Config) *time.Duration { return dst(&c.Family) })
}

func familyInt(dst func(*FamilyConfig) *int, min, max int) func(*Config, string) error {
	return integer(func(c *Config) *int { return dst(&c.Family) }, min, max)
}

// familySettings are the family's variables. The phone search reads
// Cloud9 only for a caller (no background crawl): one GetPatientList and
// at most PHONE_SEARCH_READS GetPatientInformation per search.
var familySettings = []setting{
	{name: "PHONE_SEARCH_READS", def: itoa(phoneindex.DefaultReadsPerSearch), help: "most GetPatientInformation one getPatientByFilter phone search sends (the original's 200): the listed patients with no kept record first, then the oldest records",
		apply: familyInt(func(f *FamilyConfig) *int { return &f.PhoneReadsPerSearch }, 1, 10_000)},
	{name: "PHONE_SEARCH_READS_PER_MINUTE", def: itoa(phoneindex.DefaultReadsPerMinute), help: "most GetPatientInformation the phone searches of every instance send in one minute; a patient left unread is read by a later search",
		apply: familyInt(func(f *FamilyConfig) *int { return &f.PhoneReadsPerMinute }, 1, 1_000_000)},
	{name: "PHONE_SEARCH_CONCURRENCY", def: itoa(phoneindex.DefaultConcurrency), help: "most GetPatientInformation calls in flight for one phone search (the original's batch of 10)",
		apply: familyInt(func(f *FamilyConfig) *int { return &f.PhoneConcurrency }, 1, 64)},
	{name: "PHONE_SEARCH_RECORD_MAX_AGE", def: durStr(phoneindex.DefaultRecordMaxAge), help: "a phone search reads a listed patient's kept record again once it is this old (a changed phone number)",
		apply: familyDuration(func(f *FamilyConfig) *time.Duration { return &f.PhoneRecordMaxAge })},
}
