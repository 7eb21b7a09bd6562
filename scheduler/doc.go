// Package scheduler runs flowgate's periodic maintenance jobs on cron
// schedules (robfig/cron v3, with seconds) so that a job registered on N
// instances sharing one Redis runs once per tick, not N times.
//
// # Ticks
//
// A tick is a job's scheduled time, not the time its timer fired: a firing
// at 12:00:00.004 (or a RunNow at that time) is the 12:00:00 tick, on every
// instance (prevTick). Instances therefore agree as long as their timers
// fire, and their clocks differ, by less than the job's interval. "@every d"
// ticks on multiples of d since the Unix epoch (not from process start, as
// in robfig/cron), and specs without CRON_TZ= are read in Config.Location
// (UTC by default), so that every instance computes the same ticks.
//
// # The lock
//
// Before running, an instance runs one Lua script (acquireCmd in lock.go)
// on the job's two keys, <prefix>{<job>}:last and <prefix>{<job>}:lock:
//
//   - if last >= tick, the tick already ran: skipped_claimed;
//   - else if the lock exists, an earlier run is still going: skipped_overrun;
//   - else it sets the lock to a random token (PX MaxRunTime) and last to
//     the tick, and runs the job.
//
// When the job returns, a compare-and-delete script releases the lock only
// if it still holds this run's token. A run already in progress on the same
// instance skips the tick without asking Redis, so runs never stack
// in-process. If Redis cannot be asked, the tick is skipped and counted as
// skipped_unavailable: these jobs must not run twice, so they do not run
// unlocked.
//
// # Guarantee and its limits
//
// Each tick runs at most once across all instances sharing the Redis, and
// ticks are claimed in increasing order, so an instance lagging behind can
// never rerun an older tick. It is at most once, not exactly once: a tick
// is lost if every instance that fires it is down, finds Redis down, or
// finds the lock held. And the lock is a lease, not a fence:
//
//   - It expires after MaxRunTime (default: the job's interval, at least
//     5s). The job's context ends at the same time, so a job that honours it
//     stops before its lock is gone; a job that ignores it may overlap a run
//     of a later tick on another instance. A longer TTL would instead make
//     one instance that dies mid-run block the job that long; the lock is
//     not extended while running, which keeps one round trip per tick.
//   - A crashed instance's lock blocks the job until it expires (counted as
//     skipped_overrun on the others).
//   - It assumes one Redis primary: a failover that loses the last write
//     can let a tick run twice.
//
// # Observing
//
// Metrics on Config.Registerer, per job: flowgate_cron_runs_total{job,
// result} (succeeded, failed, skipped_claimed, skipped_overrun,
// skipped_unavailable), and for the last run on this instance
// flowgate_cron_last_run_timestamp_seconds, flowgate_cron_last_duration_seconds
// and flowgate_cron_last_error (1 if it failed), and
// flowgate_cron_next_run_timestamp_seconds (the schedule's next tick: an
// alert can tell a job that is due from one outside its hours, e.g. a
// business-hours refresh at night). Status gives the same for
// health pages. Failures are logged at error with the job and the error,
// Redis trouble at warn, skips at debug.
package scheduler
