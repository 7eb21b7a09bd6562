package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/test/loadgen"
	"github.com/flowgate/flowgate/test/rediscluster"
)

// What REDIS_MIN_REPLICAS_ACK=1 costs (docs/performance.md, "Durability
// across failover"): one Redis master with one replica, two flowgates on it
// (databases 0 and 1) — one with the setting off, one with it on — and, in
// alternating rounds in the same run, signed ACKs and buffer enqueues at 64
// connections against each. Reports throughput, p50 and p99 of both and
// their ratio. Reproduce: go test -run TestLoadDurabilityCost -v ./test/
// (FLOWGATE_LOAD_N to scale; under -race the sizes are small and only
// correctness is checked).
func TestLoadDurabilityCost(t *testing.T) {
	n := loadSize() / 4
	master := rediscluster.StartServer(t, rediscluster.WithArgs("--repl-diskless-sync-delay", "0"))
	replica := rediscluster.StartServer(t, rediscluster.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port())))
	waitReplicaLinked(t, replica.Addr())

	type side struct {
		name string
		p    *proc
		c    *signedClient
	}
	var sides []side
	for db, acks := range []string{"0", "1"} {
		env := withSecrets(map[string]string{
			"REDIS_URL": fmt.Sprintf("redis://%s/%d", master.Addr(), db), "LOG_LEVEL": "warn",
			"CLOUD9_SIMULATOR": "true", "REDIS_MIN_REPLICAS_ACK": acks,
			"BUFFER_BENCH_HANDLERS": "true", "BUFFER_MAX_QUEUE_SIZE": "10000000",
			// One Cloud9 write per procedure and hour: after the first
			// booking every createAppt is answered queued at once.
			"CLOUD9_WRITE_LIMIT": "1/1h",
		})
		p := startFlowgate(t, env)
		sides = append(sides, side{name: "REDIS_MIN_REPLICAS_ACK=" + acks, p: p, c: newSignedClient(p)})
	}

	// Queued bookings: one patient per side, one booking that takes the
	// hour's write, then queued createAppt answers one after another.
	const queuedN = 20
	type bookingSide struct {
		c     *bookingClient
		pat   contracts.PatientCreatedResponse
		slots []contracts.ApptSlot
		next  int
	}
	booking := make([]*bookingSide, len(sides))
	for i, s := range sides {
		bc := newBookingClient(t, s.p)
		uui := fmt.Sprintf("call-durable-%d", i)
		b := &bookingSide{c: bc, pat: bc.createPatient("Dee", "Durable", uui)}
		b.slots = distinctSlots(t, bc.slots(uui, 2*queuedN+1), 2*queuedN+1)
		raw, et := bc.appt(tokenReq(b.pat.PatientGUID, b.pat.BookingAuthToken, b.slots[0], "First Durable", uui))
		require.Empty(t, et, "the first booking takes the hour's write: %s", truncate(raw))
		b.next = 1
		booking[i] = b
	}
	queued := func(b *bookingSide, uui string) []time.Duration {
		var took []time.Duration
		for range queuedN {
			s := b.slots[b.next]
			b.next++
			began := time.Now()
			raw, _ := b.c.appt(tokenReq(b.pat.PatientGUID, b.pat.BookingAuthToken, s, "Kid Durable", uui))
			took = append(took, time.Since(began))
			r := strictDecode[contracts.ApptQueuedResponse](t, raw)
			require.True(t, r.Queued, "want a queued answer: %s", truncate(raw))
		}
		return took
	}
	queuedTook := map[string][]time.Duration{}

	results := map[string][]loadgen.Result{}
	for round := range 2 {
		for _, s := range sides {
			tag := fmt.Sprintf("dur-%d-%s", round, s.name[len(s.name)-1:])
			createTasks(t, s.c, n, tag)
			claimed := claimAll(t, s.c, n)
			bodies := make([][]byte, n)
			for i, task := range claimed {
				bodies[i], _ = json.Marshal(contracts.AckRequest{QueueID: task.QueueID, EncounterID: task.EncounterID,
					ExperityActions: json.RawMessage(`{"ok":true}`)})
			}
			addr := s.c.addr
			ack := loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: n,
				Build: func(i int, req *fasthttp.Request) { sign(req, addr, "POST", "/ack", bodies[i]) },
				Check: func(i int, resp *fasthttp.Response) error {
					if resp.StatusCode() != 200 || !bytes.Contains(resp.Body(), []byte(`"status":"DONE"`)) {
						return fmt.Errorf("ack %d: %d %s", i, resp.StatusCode(), resp.Body())
					}
					return nil
				}})
			require.Zero(t, ack.Failures, "%s ACK: %v", s.name, ack.FirstError)
			enq := loadgen.Run(loadgen.Config{Addr: addr, Conns: 64, Requests: n, Check: wantStatus(202),
				Build: enqueueReq(addr, testSecrets["BUFFER_API_TOKEN"], func(i int) string {
					return `{"type":"noop","payload":{"r":"` + tag + `","i":` + strconv.Itoa(i) + `}}`
				})})
			require.Zero(t, enq.Failures, "%s enqueue: %v", s.name, enq.FirstError)
			queuedTook[s.name] = append(queuedTook[s.name], queued(booking[slices.Index(sides, s)], fmt.Sprintf("call-durable-%d", slices.Index(sides, s)))...)
			results[s.name+" ACK"] = append(results[s.name+" ACK"], ack)
			results[s.name+" enqueue"] = append(results[s.name+" enqueue"], enq)
		}
	}
	best := func(k string) loadgen.Result {
		rs := results[k]
		b := rs[0]
		for _, r := range rs[1:] {
			if r.PerSecond() > b.PerSecond() {
				b = r
			}
		}
		return b
	}
	var lines []string
	for _, op := range []string{"ACK", "enqueue"} {
		off, on := best(sides[0].name+" "+op), best(sides[1].name+" "+op)
		lines = append(lines, fmt.Sprintf("%s off: %s\n%s on:  %s\n%s on/off throughput %.2f×, p50 %s → %s, p99 %s → %s",
			op, off, op, on, op, on.PerSecond()/off.PerSecond(),
			off.P50.Round(10*time.Microsecond), on.P50.Round(10*time.Microsecond),
			off.P99.Round(10*time.Microsecond), on.P99.Round(10*time.Microsecond)))
	}
	for _, sd := range sides {
		d := queuedTook[sd.name]
		slices.Sort(d)
		lines = append(lines, fmt.Sprintf("queued createAppt, one at a time, %s: %d answers, p50 %s, p99 %s",
			sd.name, len(d), percentile(d, 50).Round(10*time.Microsecond), percentile(d, 99).Round(10*time.Microsecond)))
	}
	t.Logf("durability barrier, best of 2 alternating rounds, %d requests each, 64 conns:\n%s", n, strings.Join(lines, "\n"))
}

// waitReplicaLinked waits until the replica at addr has its master link up.
func waitReplicaLinked(t *testing.T, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	require.Eventually(t, func() bool {
		out, err := c.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(out, "master_link_status:up")
	}, 15*time.Second, 20*time.Millisecond, "replica %s never linked", addr)
}
