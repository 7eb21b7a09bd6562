// Package chaos holds flowgate's fault drills: the built binary on private
// redis-server processes, on loopback, with faults injected under load —
// Redis paused (SIGSTOP) and killed with an AOF restart under signed
// claim/ACK/FAIL traffic, flowgate SIGKILLed under load, the booking
// endpoints with Redis paused, every queue API route's budget with Redis
// paused (signature check included), a bad-input sweep over every registered
// route, a slowloris set beside a normal client, and the security drills:
// starts on a real Redis without a Cloud9 choice (refused, exit 2), an
// anonymous client trying every way to read other calls' queued bookings
// from queue-status, the operation endpoints' key routes attacked on every
// key family of flowgate's with the REDIS_SHARDS marker deleted underneath,
// and every value a spy on the holds stream and the public /v1 routes sees,
// sent to every route that acts on a hold, a stream or a booking (none may
// be accepted). Each drill is bounded
// in time and count and logs what it injected and what it counted.
//
// The drills carry the build tag chaos, so the default `go test ./...`
// stays inside its time budget; run them with
//
//	test/run -tags chaos ./test/chaos/
//	test/run -tags chaos -run DrillRedisOutage ./test/chaos/
//
// (.ci/run does, after the default run). FLOWGATE_DRILL_PAUSE sets how long
// the Redis outage drills keep Redis stopped (default 30s).
package chaos
