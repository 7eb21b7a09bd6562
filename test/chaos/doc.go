// Package chaos holds flowgate's fault drills: the built binary on private
// redis-server processes, on loopback, with faults injected under load —
// Redis paused (SIGSTOP) and killed with an AOF restart under signed
// claim/ACK/FAIL traffic, flowgate SIGKILLed under load, the booking
// endpoints with Redis paused, every queue API route's budget with Redis
// paused (signature check included), a bad-input sweep over every registered
// route, a slowloris set beside a normal client, and a security replay:
// every value a spy on the holds stream and the public /v1 routes sees,
// sent to every route that acts on a hold, a stream or a booking (none
// may be accepted; DRILL security holds). Each drill is bounded
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
