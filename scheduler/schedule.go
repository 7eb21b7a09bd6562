package scheduler

import (
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads six-field specs (seconds first) and descriptors such as
// "@hourly" or "@every 30s"; "CRON_TZ=Europe/Paris " prefixes are accepted.
var parser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ValidateSpec reports whether spec is a schedule Register would accept,
// so configuration can be checked before anything starts.
func ValidateSpec(spec string) error {
	_, err := Interval(spec)
	return err
}

// Interval is the shortest gap between two ticks of spec (in UTC) from
// now on: a job's period, as cache-health reports it.
func Interval(spec string) (time.Duration, error) {
	sched, err := parseSpec(spec, time.UTC)
	if err != nil {
		return 0, fmt.Errorf("invalid cron spec %q: %w", spec, err)
	}
	d, err := minInterval(sched, time.Now().UTC())
	if err != nil {
		return 0, fmt.Errorf("cron spec %q never fires: %w", spec, err)
	}
	return d, nil
}

// parseSpec parses spec in loc. "@every d" becomes an everySchedule
// aligned on the Unix epoch instead of cron's ConstantDelaySchedule, which
// counts from whenever each process started: instances started at different
// times would never agree on a tick.
func parseSpec(spec string, loc *time.Location) (cron.Schedule, error) {
	sched, err := parser.Parse(spec)
	if err != nil {
		return nil, err
	}
	switch s := sched.(type) {
	case cron.ConstantDelaySchedule:
		return everySchedule{period: s.Delay}, nil
	case *cron.SpecSchedule:
		if s.Location == time.Local { // no CRON_TZ= prefix: use the scheduler's location
			s.Location = loc
		}
		return s, nil
	default:
		return sched, nil
	}
}

// everySchedule fires at every multiple of period since the Unix epoch, so
// "@every 30s" fires at :00 and :30 of every minute on every instance.
// period is a whole number of seconds, at least one (cron.Every rounds it).
type everySchedule struct {
	period time.Duration
}

// Next returns the first multiple of period strictly after t.
func (e everySchedule) Next(t time.Time) time.Time {
	p := int64(e.period)
	n := t.UnixNano()
	q := n / p
	if n%p < 0 { // floor division for times before 1970
		q--
	}
	return time.Unix(0, (q+1)*p).In(t.Location())
}

// maxLookback bounds the search for the previous tick; a leap-day
// schedule needs four years.
const maxLookback = 1 << 28 * time.Second // about 8.5 years

var errNoTick = errors.New("no scheduled time in the lookback window")

// prevTick returns the latest time <= t at which sched fires: the
// scheduled time of a firing that happens at t. It is the tick's identity,
// so instances whose timers fire some milliseconds apart, or whose clocks
// differ by less than the interval, agree on it.
//
// Every cron tick is a whole second, so the tick is sched.Next(x) for the
// largest whole second x with Next(x) <= t. The search doubles a lookback
// until some tick falls inside it, then bisects: at most about 60 calls of
// Next, however sparse or bursty the schedule.
func prevTick(sched cron.Schedule, t time.Time) (time.Time, error) {
	t = t.Truncate(time.Second)
	fires := func(x time.Time) bool { // some tick in (x, t]
		n := sched.Next(x)
		return !n.IsZero() && !n.After(t)
	}
	hi := t // fires(hi) is false: Next is strictly after its argument
	lookback := time.Second
	for !fires(t.Add(-lookback)) {
		if lookback >= maxLookback {
			return time.Time{}, fmt.Errorf("scheduler: previous tick of %v: %w", t, errNoTick)
		}
		hi = t.Add(-lookback)
		lookback *= 2
	}
	lo := t.Add(-lookback) // fires(lo) is true
	for hi.Sub(lo) > time.Second {
		mid := lo.Add((hi.Sub(lo) / 2).Truncate(time.Second))
		if fires(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return sched.Next(lo), nil
}

// minInterval is the shortest gap between the next few ticks after t, the
// job's interval for the default MaxRunTime and the TTL of the last key.
// Irregular schedules ("0 0 9 * * MON-FRI") get their shortest gap.
func minInterval(sched cron.Schedule, t time.Time) (time.Duration, error) {
	const samples = 8
	prev := sched.Next(t)
	if prev.IsZero() {
		return 0, errNoTick
	}
	shortest := time.Duration(0)
	for range samples {
		next := sched.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); shortest == 0 || gap < shortest {
			shortest = gap
		}
		prev = next
	}
	if shortest == 0 { // fires once more, then never: any interval will do
		shortest = time.Hour
	}
	return shortest, nil
}
