package test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
)

// TestTwoInstancesShareTheQueue: two processes on one Redis database serve
// one queue. Tasks created through instance 1 are claimed through both by
// 16 concurrent workers until none is left — each exactly once — and
// acknowledged through the other instance; a signed request accepted by
// instance 1 is a replay for instance 2.
func TestTwoInstancesShareTheQueue(t *testing.T) {
	t.Parallel()
	db := newTestRedis(t)
	env := taskEnv(db.URL(), nil)
	p1, p2 := startFlowgate(t, env), startFlowgate(t, env)
	s := newSigner()
	apis := []*api{newAPI(t, p1, s), newAPI(t, p2, s)}

	// 200 tasks through instance 1, in batches of 50.
	const n = 200
	created := map[string]string{} // queue_id → encounter_id
	for b := 0; b < n/50; b++ {
		items := make([]string, 50)
		for i := range items {
			items[i] = fmt.Sprintf(`{"encounter_id":"enc-%03d","payload":{"i":%d}}`, b*50+i, b*50+i)
		}
		resp := decodeReply[contracts.BatchCreateResponse](t,
			apis[0].do("POST", "/queue", []byte(`{"tasks":[`+strings.Join(items, ",")+`]}`)), 201)
		require.Equal(t, 50, resp.Created)
		for _, r := range resp.Results {
			created[r.Task.QueueID] = r.Task.EncounterID
		}
	}
	require.Len(t, created, n)

	// 8 workers per instance claim until the queue is empty.
	type claim struct {
		id, worker string
		via        int
	}
	var (
		mu     sync.Mutex
		claims []claim
		errs   []error
		wg     sync.WaitGroup
	)
	for inst := 0; inst < 2; inst++ {
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(inst int, worker string, limit int) {
				defer wg.Done()
				a := apis[inst]
				for {
					r, err := a.roundTrip("POST", "/queue/claim", claimBody(worker, limit))
					if err == nil && r.Status != 200 && r.Status != 204 {
						err = fmt.Errorf("%s: claim: %d %s", worker, r.Status, r.Body)
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					if r.Status == 204 {
						return
					}
					var resp contracts.ClaimResponse
					err = json.Unmarshal(r.Body, &resp)
					if err == nil && len(resp.Tasks) == 0 {
						err = errors.New("no tasks")
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("%s: claim answer %s: %w", worker, r.Body, err))
						mu.Unlock()
						return
					}
					mu.Lock()
					for _, tk := range resp.Tasks {
						if tk.Status != contracts.StatusProcessing || tk.WorkerID != worker {
							errs = append(errs, fmt.Errorf("%s: claimed %+v", worker, tk))
						}
						claims = append(claims, claim{tk.QueueID, worker, inst})
					}
					mu.Unlock()
				}
			}(inst, fmt.Sprintf("vm-%d-%d", inst+1, w), w%3+1) // limits 1..3
		}
	}
	wg.Wait()
	require.Empty(t, errs)
	seen := map[string]string{}
	perInstance := [2]int{}
	for _, cl := range claims {
		require.NotContains(t, seen, cl.id, "task %s claimed by %s and %s", cl.id, seen[cl.id], cl.worker)
		require.Contains(t, created, cl.id)
		seen[cl.id] = cl.worker
		perInstance[cl.via]++
	}
	require.Len(t, seen, n, "every task claimed")
	t.Logf("claims through instance 1: %d, instance 2: %d", perInstance[0], perInstance[1])
	for i, p := range []*proc{p1, p2} {
		require.Positive(t, perInstance[i], "instance %d claimed nothing", i+1)
		require.Positive(t, metricSum(scrape(t, p), "http_requests_total", `route="/queue/claim"`, `status="200"`),
			"instance %d served no claim", i+1)
	}
	st := apis[1].stats()
	require.Equal(t, n, st.ByStatus[contracts.StatusProcessing])

	// ACK every task through the instance it was not claimed through.
	work := make(chan claim)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cl := range work {
				body := fmt.Sprintf(`{"queue_id":%q,"encounter_id":%q,"experityActions":{"by":%q},"worker_id":%q}`,
					cl.id, created[cl.id], cl.worker, cl.worker)
				r, err := apis[1-cl.via].roundTrip("POST", "/ack", []byte(body))
				if err == nil && r.Status != 200 {
					err = fmt.Errorf("ack %s: %d %s", cl.id, r.Status, r.Body)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, cl := range claims {
		work <- cl
	}
	close(work)
	wg.Wait()
	require.Empty(t, errs)

	for i, a := range apis {
		st := a.stats()
		require.Equal(t, n, st.ByStatus[contracts.StatusDone], "instance %d: %+v", i+1, st)
		require.Equal(t, n, st.Total)
	}
	list := decodeReply[contracts.ListResponse](t, apis[0].do("GET", "/queue?status=DONE&limit=1000", nil), 200)
	require.Len(t, list.Tasks, n)
	for _, tk := range list.Tasks {
		require.JSONEq(t, fmt.Sprintf(`{"experityActions":{"by":%q}}`, seen[tk.QueueID]), string(tk.ParsedPayload))
	}

	// A signed create accepted by instance 1 is a replay for instance 2,
	// refused before the ledger would answer it as a duplicate.
	req, err := apis[0].sign("POST", "/queue", []byte(`{"encounter_id":"enc-replayed","payload":{}}`))
	require.NoError(t, err)
	first := decodeReply[contracts.CreateResponse](t, apis[0].mustSend(req), 201)
	envl := errorOf(t, apis[1].mustSend(req), 401, contracts.CodeUnauthorized)
	require.Equal(t, "replayed", envl.Error.Details["reason"])
	q := url.Values{"encounter_id": {"enc-replayed"}}
	list = decodeReply[contracts.ListResponse](t, apis[1].do("GET", "/queue?"+q.Encode(), nil), 200)
	require.Len(t, list.Tasks, 1)
	require.Equal(t, first.Task.QueueID, list.Tasks[0].QueueID)
}
