package flows_test

import (
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/noderedtest"
	"github.com/flowgate/flowgate/test/redistest"
	"github.com/flowgate/flowgate/webhooks/signature"
)

var updatePaletteShot = flag.Bool("update-palette-screenshot", false,
	"rewrite flows/node-red/palette/editor.png from TestPaletteEndToEnd's editor screenshot")

const (
	paletteBufferToken = "flows-palette-buffer-token-0123456789"
	paletteModule      = "node-red-contrib-flowgate"
	// paletteOutboundSecret is flowgate's OUTBOUND_HMAC_SECRET, the flows'
	// handler secret.
	paletteOutboundSecret = "flows-palette-outbound-secret-0123456789"
)

// paletteTypes are the node types the package registers.
var paletteTypes = []string{"flowgate-config", "flowgate-enqueue", "flowgate-task", "flowgate-hold", "flowgate-hold-stream",
	"flowgate-handler-in", "flowgate-handler-out"}

// paletteRig is TestPaletteEndToEnd's fixture: flowgate and Node-RED with
// the packed palette, started once; the steps run on it in order.
type paletteRig struct {
	fg      *flowgate
	nr      *noderedtest.Proc
	c       nrCall
	run     string            // this run's suffix for ids
	typeID  string            // the consultation type, unique to this run
	open    map[string]string // headers of the open holds routes: none
	bearer  map[string]string // the buffer API's token
	started time.Time
}

// TestPaletteEndToEnd: the palette end to end. `npm pack`, the tarball
// installed into a fresh Node-RED user directory the way the palette
// manager installs a package, the pinned Node-RED started there with two
// flows (the package's example, examples/flowgate-demo.json, and
// test/e2e-flow.json, whose HTTP endpoints drive each node) against the
// flowgate binary on a real Redis. Each node's effect is checked through
// flowgate's own API; headless Chromium then loads the editor (every node
// type known, none "unknown") and takes the README's screenshot:
//
//	go test ./flows/ -run TestPaletteEndToEnd -update-palette-screenshot
func TestPaletteEndToEnd(t *testing.T) {
	r := startPalette(t)
	t.Run("Node-RED loaded the installed package", r.installedPackage)
	t.Run("VM task: create, claim, heartbeat, ACK, FAIL", r.vmTask)
	t.Run("holds: create, heartbeat, release; the stream node sees them", r.holds)
	t.Run("a refusal reaches the flow's Catch node with flowgate's code", r.refusal)
	t.Run("work buffer: enqueue; a Node-RED flow handles the message", r.workBuffer)
	t.Run("the example flow runs 5/5; the editor shows every node", r.exampleFlow)
	t.Logf("palette end to end: %s", time.Since(r.started).Round(time.Millisecond))
}

// startPalette packs and installs the palette, starts flowgate and
// Node-RED with the two flows, and returns them as the steps' fixture.
func startPalette(t *testing.T) *paletteRig {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skips building and running flowgate and Node-RED")
	}
	nodeJS(t)
	noderedtest.Dir(t) // skips when npm cannot install Node-RED
	started := time.Now()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	typeID := "palette-e2e-" + run
	nrAddr := flowgatetest.FreeAddr(t)
	db := redistest.New(t)
	// A handler declared in BUFFER_HANDLERS_FILE: email.send goes to the
	// flow's second handler-in node, signed with OUTBOUND_HMAC_SECRET (the
	// handler secret of the flows' configuration; never HMAC_SECRET).
	handlersFile := filepath.Join(t.TempDir(), "handlers.yaml")
	if err := os.WriteFile(handlersFile, []byte("handlers:\n  - type: email.send\n    url: http://"+nrAddr+"/flowgate/email\n"+
		"    timeout: 5s\n    maxRetries: 2\n    sign: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := flowgatetest.Start(t, map[string]string{
		"REDIS_URL": db.URL(), "BUFFER_HANDLERS_FILE": handlersFile, "HMAC_SECRET": testSecret, "BOOKING_AUTH_SECRET": "flows-test-booking-secret-0123456789",
		"OUTBOUND_HMAC_SECRET": paletteOutboundSecret,
		"BUFFER_API_TOKEN":     paletteBufferToken, "HOLDS_SCHEDULE_FILE": paletteSchedule(t, typeID),
		// webhook.forward posts to the flow's flowgate-handler-in node
		"BUFFER_WEBHOOK_URL": "http://" + nrAddr + "/flowgate/handler",
		// a FAILed task comes back after 5 min, not during the test
		"REQUEUE_BACKOFF_BASE": "5m", "REQUEUE_BACKOFF_MAX": "5m",
	})
	fg := &flowgate{t: t, base: p.Base, client: &http.Client{Timeout: 30 * time.Second}}
	bearer := map[string]string{"Authorization": "Bearer " + paletteBufferToken}
	open := map[string]string{} // no signature: the holds routes are open

	demoFlow, e2eFlow := "flows/node-red/palette/examples/flowgate-demo.json", "flows/node-red/palette/test/e2e-flow.json"
	paletteFlowIDsDistinct(t, "../"+demoFlow, "../"+e2eFlow)
	nr := noderedtest.StartWith(t, noderedtest.Options{
		Addr: nrAddr,
		Env: map[string]string{"FLOWGATE_URL": p.Base, "FLOWGATE_HMAC_SECRET": testSecret, "FLOWGATE_BUFFER_TOKEN": paletteBufferToken,
			"FLOWGATE_OUTBOUND_HMAC_SECRET": paletteOutboundSecret,
			"FLOWGATE_E2E_TYPE":             typeID, "FLOWGATE_APPOINTMENT_TYPE": typeID},
		Flows: []string{demoFlow, e2eFlow},
		Prepare: func(user string) {
			installPalette(t, user)
			// The secrets as credentials (plain: the test settings have no
			// credentialSecret), read from the environment.
			creds := map[string]map[string]string{}
			for _, id := range []string{"fge2ecfg", "fgdemocfg"} {
				creds[id] = map[string]string{"hmacSecret": "${FLOWGATE_HMAC_SECRET}", "bufferToken": "${FLOWGATE_BUFFER_TOKEN}",
					"handlerSecret": "${FLOWGATE_OUTBOUND_HMAC_SECRET}"}
			}
			raw, _ := json.Marshal(creds)
			if err := os.WriteFile(filepath.Join(user, "flows_cred.json"), raw, 0o600); err != nil {
				t.Fatal(err)
			}
			// The editor for the screenshot: the flowgate category first, no tour.
			f, err := os.OpenFile(filepath.Join(user, "settings.js"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = f.WriteString(`module.exports.paletteCategories = ["flowgate", "common", "function", "network", "sequence", "parser", "storage"];
module.exports.editorTheme = { tours: false, projects: { enabled: false } };
`)
			_ = f.Close()
		},
	})
	t.Logf("flowgate and Node-RED with the packed palette up in %s", time.Since(started).Round(time.Millisecond))
	c := nrCall{t: t, nr: nr}
	return &paletteRig{fg: fg, nr: nr, c: c, run: run, typeID: typeID, open: open, bearer: bearer, started: started}
}

// installedPackage: Node-RED lists the palette's node types, each set enabled,
// at the packed version.
func (r *paletteRig) installedPackage(t *testing.T) {
	nr := r.nr
	status, _, raw := nr.Do(t, http.MethodGet, "/nodes", map[string]string{"Accept": "application/json"}, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /nodes: %d %s", status, raw)
	}
	var sets []struct {
		Module  string   `json:"module"`
		Version string   `json:"version"`
		Types   []string `json:"types"`
		Enabled bool     `json:"enabled"`
		Err     any      `json:"err"`
	}
	if err := json.Unmarshal(raw, &sets); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, s := range sets {
		if s.Module != paletteModule {
			continue
		}
		if !s.Enabled || s.Err != nil || s.Version != "0.1.0" {
			t.Errorf("node set %v: version %s enabled %v err %v", s.Types, s.Version, s.Enabled, s.Err)
		}
		types = append(types, s.Types...)
	}
	sort.Strings(types)
	want := append([]string(nil), paletteTypes...)
	sort.Strings(want)
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("%s registers %v, want %v", paletteModule, types, want)
	}
}

// vmTask: a VM task created through Node-RED is claimed, heartbeated and
// ACKed; a second FAILs and is requeued.
func (r *paletteRig) vmTask(t *testing.T) {
	fg, nr, c, run := r.fg, r.nr, r.c, r.run
	var created contracts.CreateResponse
	if s := c.call("/t/task/create", map[string]any{"encounter_id": "enc-nr-ack-" + run, "payload": map[string]string{"patient": "Zoë 🚑"}}, &created); s != http.StatusOK || !created.Success {
		t.Fatalf("create through Node-RED: %d %+v", s, created)
	}
	if task := fg.taskAgain(created.Task.QueueID); task.Status != contracts.StatusPending || task.EncounterID != "enc-nr-ack-"+run {
		t.Fatalf("created task: %+v", task)
	}
	var ack contracts.WebhookResponse
	if s := c.call("/t/task/work", map[string]any{}, &ack); s != http.StatusOK || ack.Status != contracts.StatusDone || ack.QueueID != created.Task.QueueID {
		t.Fatalf("work (claim, heartbeat, ACK): %d %+v", s, ack)
	}
	task := fg.taskAgain(created.Task.QueueID)
	if task.Status != contracts.StatusDone || task.WorkerID != "nr-e2e" {
		t.Errorf("after the ACK: status %s worker %q", task.Status, task.WorkerID)
	}
	if task.ClaimedAt == nil || task.HeartbeatAt == nil || task.HeartbeatAt.Before(*task.ClaimedAt) {
		t.Errorf("claimed_at %v heartbeat_at %v: the heartbeat did not reach flowgate", task.ClaimedAt, task.HeartbeatAt)
	}
	var pp struct {
		ExperityActions json.RawMessage `json:"experityActions"`
	}
	_ = json.Unmarshal(task.ParsedPayload, &pp)
	if !jsonEq(t, pp.ExperityActions, `{"done_by":"node-red","echo":{"patient":"Zoë 🚑"}}`) {
		t.Errorf("experityActions %s", pp.ExperityActions)
	}

	if s := c.call("/t/task/create", map[string]any{"encounter_id": "enc-nr-fail-" + run, "payload": map[string]bool{"fail": true}}, &created); s != http.StatusOK {
		t.Fatalf("create: %d", s)
	}
	var failed contracts.WebhookResponse
	if s := c.call("/t/task/work", map[string]any{}, &failed); s != http.StatusOK || failed.Status != contracts.StatusError || !failed.Requeued {
		t.Fatalf("work (claim, heartbeat, FAIL): %d %+v", s, failed)
	}
	if task := fg.taskAgain(created.Task.QueueID); task.Status != contracts.StatusError || task.Attempts != 1 || task.ErrorMessage != "asked to fail" {
		t.Errorf("after the FAIL: status %s attempts %d error %q", task.Status, task.Attempts, task.ErrorMessage)
	}
	st := nr.Statuses(t)
	for id, want := range map[string]string{"t_ack": "ACK DONE", "t_fail": "FAIL ERROR (requeued)"} {
		if st[id].Fill != "green" || st[id].Text != want {
			t.Errorf("node %s shows %+v, want green %q", id, st[id], want)
		}
	}
}

// holds: a hold created, heartbeated and released through Node-RED; the stream
// node sees each event by the hold's public ref.
func (r *paletteRig) holds(t *testing.T) {
	fg, nr, c, typeID, open := r.fg, r.nr, r.c, r.typeID, r.open
	from := time.Now().AddDate(0, 0, 1).Format(time.DateOnly)
	status, raw := fg.do(http.MethodGet, "/v1/appointment-types/"+typeID+"/timeslots?from="+from+"&days=14", nil, open)
	var slots struct {
		Slots []struct {
			Start time.Time `json:"slotStartDate"`
			Free  []string  `json:"specialistIds"`
		} `json:"slots"`
	}
	if err := json.Unmarshal(raw, &slots); status != http.StatusOK || err != nil || len(slots.Slots) == 0 || len(slots.Slots[0].Free) == 0 {
		t.Fatalf("timeslots: %d %s", status, raw)
	}
	slot := slots.Slots[0]
	start := slot.Start.UTC().Format(time.RFC3339)
	var hold struct {
		HoldID, HoldRef, SpecialistID, HoldExpiresAt string
	}
	if s := c.call("/t/hold/create", map[string]string{"appointmentTypeId": typeID, "slotStartDate": start, "clientId": "nr-e2e-client",
		"specialistId": slot.Free[0]}, &hold); s != http.StatusOK || hold.HoldID == "" || hold.HoldRef == "" || hold.SpecialistID != slot.Free[0] {
		t.Fatalf("hold through Node-RED: %d %+v", s, hold)
	}
	other, _ := json.Marshal(map[string]string{"appointmentTypeId": typeID, "slotStartDate": start, "clientId": "someone-else", "specialistId": slot.Free[0]})
	if status, raw := fg.do(http.MethodPost, "/v1/holds", other, open); status != http.StatusConflict {
		t.Fatalf("another client's hold of the held slot: %d %s, want 409", status, raw)
	}
	var kept struct {
		OK            bool
		HoldExpiresAt string
	}
	if s := c.call("/t/hold/heartbeat", map[string]string{"holdId": hold.HoldID, "clientId": "nr-e2e-client"}, &kept); s != http.StatusOK || !kept.OK || kept.HoldExpiresAt < hold.HoldExpiresAt {
		t.Fatalf("heartbeat through Node-RED: %d %+v (was %s)", s, kept, hold.HoldExpiresAt)
	}
	var released struct{ Released bool }
	if s := c.call("/t/hold/release", map[string]string{"holdId": hold.HoldID, "clientId": "nr-e2e-client"}, &released); s != http.StatusOK || !released.Released {
		t.Fatalf("release through Node-RED: %d %+v", s, released)
	}
	var lost struct{ OK *bool }
	if s := c.call("/t/hold/heartbeat", map[string]string{"holdId": hold.HoldID, "clientId": "nr-e2e-client"}, &lost); s != http.StatusOK || lost.OK == nil || *lost.OK {
		t.Fatalf("heartbeat of the released hold through Node-RED: %d %+v, want the web face's {ok:false}", s, lost)
	}
	if st := nr.Statuses(t)["h_hb"]; st.Fill != "red" || st.Text != "lost "+hold.HoldID[:8] {
		t.Errorf("the hold node shows %+v after a lost heartbeat", st)
	}
	status, raw = fg.do(http.MethodPost, "/v1/holds", other, open)
	var h2 struct{ HoldID string }
	if _ = json.Unmarshal(raw, &h2); status != http.StatusCreated {
		t.Fatalf("the released slot: %d %s, want 201", status, raw)
	}
	// Released by the wrong client through Node-RED: flowgate's 409 reaches
	// the Catch node, and its message names neither the hold id nor the
	// client id (the hold's credentials; the message is logged).
	var refused struct {
		Error struct{ Code, Message string }
	}
	if s := c.call("/t/hold/release", map[string]string{"holdId": h2.HoldID, "clientId": "nr-e2e-client"}, &refused); s != http.StatusConflict ||
		refused.Error.Code != "conflict" || !strings.Contains(refused.Error.Message, "/v1/holds/{holdId}?clientId={clientId}") ||
		strings.Contains(refused.Error.Message, h2.HoldID) || strings.Contains(refused.Error.Message, "nr-e2e-client") {
		t.Errorf("a release of another client's hold: %d %+v", s, refused)
	}
	fg.do(http.MethodDelete, "/v1/holds/"+h2.HoldID+"?clientId=someone-else", nil, open)

	// An event names the hold by its public holdRef; neither the hold's
	// id (its secret) nor a clientId is on the stream.
	seen := func(topic string) bool {
		var events []struct {
			Topic   string
			Payload struct{ HoldID, ClientID string }
		}
		c.call("/t/stream/events", nil, &events)
		for _, e := range events {
			if e.Payload.HoldID == hold.HoldID || e.Payload.ClientID != "" {
				t.Errorf("a stream event carries a credential: %+v", e)
			}
			if e.Topic == topic && e.Payload.HoldID == hold.HoldRef {
				return true
			}
		}
		return false
	}
	waitFor(t, 10*time.Second, "the stream node's hold event", func() bool { return seen("hold") })
	waitFor(t, 10*time.Second, "the stream node's release event", func() bool { return seen("release") })
	if st := nr.Statuses(t)["stream"]; st.Fill != "green" || st.Text != "connected "+typeID {
		t.Errorf("stream node shows %+v", st)
	}
}

// refusal: flowgate's 400 reaches the flow's Catch node with its code.
func (r *paletteRig) refusal(t *testing.T) {
	nr, c := r.nr, r.c
	var out struct {
		Error         struct{ Code, Message string }
		FlowgateError struct {
			Status  int
			Details map[string]any
		}
	}
	// A malformed hold id (a heartbeat of a hold that is gone answers
	// the 200 {ok:false} of docs/holds.md, not an error).
	if s := c.call("/t/hold/heartbeat", map[string]string{"holdId": "no:such:hold", "clientId": "nr-e2e-client"}, &out); s != http.StatusBadRequest ||
		out.Error.Code != "invalid" || out.FlowgateError.Status != http.StatusBadRequest || out.FlowgateError.Details["field"] != "holdId" {
		t.Fatalf("%d %+v", s, out)
	}
	if st := nr.Statuses(t)["h_hb"]; st.Fill != "red" || st.Text != "400 invalid" {
		t.Errorf("the hold node shows %+v", st)
	}
}

// workBuffer: messages enqueued through Node-RED are handled by a flow; a 4xx
// answer dead-letters; a declared type's answer is its result.
func (r *paletteRig) workBuffer(t *testing.T) {
	fg, nr, c, bearer := r.fg, r.nr, r.c, r.bearer
	message := func(id string) contracts.BufferMessage {
		status, raw := fg.do(http.MethodGet, "/api/buffer/messages/"+id, nil, bearer)
		var m contracts.BufferMessage
		if status != http.StatusOK || json.Unmarshal(raw, &m) != nil {
			t.Fatalf("GET /api/buffer/messages/%s: %d %s", id, status, raw)
		}
		return m
	}
	var enq contracts.BufferEnqueueResponse
	if s := c.call("/t/enqueue", map[string]string{"to": "zoë@example.com"}, &enq); s != http.StatusOK || !enq.Success || enq.MessageID == "" {
		t.Fatalf("enqueue through Node-RED: %d %+v", s, enq)
	}
	var m contracts.BufferMessage
	waitFor(t, 30*time.Second, "the message completed", func() bool { m = message(enq.MessageID); return m.State == contracts.BufferCompleted })
	if m.Type != "webhook.forward" || m.AttemptCount != 1 || !jsonEq(t, m.Payload, `{"to":"zoë@example.com"}`) || !jsonEq(t, m.Result, `{"status":200}`) {
		t.Errorf("completed message: %+v (result %s)", m, m.Result)
	}
	var handled []struct {
		Payload json.RawMessage
		Topic   string
		Buffer  struct {
			MessageID string
			Attempt   int
		}
		Headers map[string]string // what flowgate signed the delivery with
		Raw     *string           // its body's bytes
	}
	c.call("/t/handled", nil, &handled)
	if len(handled) != 1 || handled[0].Buffer.MessageID != enq.MessageID || handled[0].Buffer.Attempt != 1 ||
		handled[0].Topic != "webhook.forward" || !jsonEq(t, handled[0].Payload, `{"to":"zoë@example.com"}`) {
		t.Errorf("the flow handled %+v", handled)
	}

	// A failed answer with a 4xx: the message is dead-lettered at once.
	if s := c.call("/t/enqueue", map[string]bool{"fail": true}, &enq); s != http.StatusOK {
		t.Fatalf("enqueue: %d", s)
	}
	waitFor(t, 30*time.Second, "the message dead-lettered", func() bool { m = message(enq.MessageID); return m.State == contracts.BufferDLQ })
	if m.AttemptCount != 1 || m.LastError == nil || !strings.Contains(m.LastError.Message, "422") || !strings.Contains(m.LastError.Message, "REJECTED") {
		t.Errorf("dead letter: attempts %d lastError %+v", m.AttemptCount, m.LastError)
	}
	st := nr.Statuses(t)
	if st["handler"].Fill != "green" || !strings.HasPrefix(st["handler"].Text, "received 2") {
		t.Errorf("handler in shows %+v", st["handler"])
	}
	if st["handler_out"].Fill != "red" || st["handler_out"].Text != "failed 422 REJECTED" {
		t.Errorf("handler out shows %+v", st["handler_out"])
	}
	// The endpoint verifies flowgate's signature.
	status, _, raw := nr.Do(t, http.MethodPost, "/flowgate/handler", map[string]string{"Content-Type": "application/json"}, []byte(`{"to":"x"}`))
	if status != http.StatusUnauthorized || !strings.Contains(string(raw), "missing_headers") {
		t.Errorf("an unsigned POST to the handler: %d %s", status, raw)
	}
	// A delivery flowgate signed (X-Buffer-Signature included), captured
	// and resent: as it was, as another attempt, or under another message
	// id, it is refused and the flow does not run again.
	first := handled[0]
	if first.Headers[strings.ToLower(hmacsig.HeaderDeliverySignature)] == "" || first.Raw == nil {
		t.Fatalf("the flow did not see flowgate's X-Buffer-Signature or the raw body: %+v", first)
	}
	for _, tc := range []struct{ header, value, reason string }{
		{"", "", signature.ReasonReplayed},
		{hmacsig.HeaderAttempt, "2", signature.ReasonBadSignature},
		{hmacsig.HeaderMessageID, "forged-" + first.Buffer.MessageID, signature.ReasonBadSignature},
		{hmacsig.HeaderDeliverySignature, "", signature.ReasonMissingHeaders},
	} {
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range first.Headers {
			h[k] = v
		}
		if tc.header != "" {
			delete(h, strings.ToLower(tc.header))
			if tc.value != "" {
				h[tc.header] = tc.value
			}
		}
		status, _, raw := nr.Do(t, http.MethodPost, "/flowgate/handler", h, []byte(*first.Raw))
		if status != http.StatusUnauthorized || !strings.Contains(string(raw), `"reason":"`+tc.reason+`"`) {
			t.Errorf("flowgate's delivery resent with %s %q: %d %s, want 401 %s", tc.header, tc.value, status, raw, tc.reason)
		}
	}
	var again []json.RawMessage
	if c.call("/t/handled", nil, &again); len(again) != 2 {
		t.Errorf("the flow ran %d times, want 2 (the resent deliveries ran it again)", len(again))
	}

	// A type declared in BUFFER_HANDLERS_FILE, handled by a Node-RED flow:
	// the flow's JSON answer is the message's result.
	status, raw = fg.do(http.MethodPost, "/api/buffer/enqueue", []byte(`{"type":"email.send","payload":{"to":"ann@example.com"}}`), bearer)
	var decl contracts.BufferEnqueueResponse
	if status != http.StatusAccepted || json.Unmarshal(raw, &decl) != nil || decl.MessageID == "" {
		t.Fatalf("enqueue email.send: %d %s", status, raw)
	}
	waitFor(t, 30*time.Second, "the declared handler's message completed", func() bool {
		m = message(decl.MessageID)
		return m.State == contracts.BufferCompleted
	})
	if m.Type != "email.send" || m.AttemptCount != 1 || !jsonEq(t, m.Result, `{"handled":true,"echo":{"to":"ann@example.com"}}`) {
		t.Errorf("declared handler's message: %+v (result %s)", m, m.Result)
	}
	handled = nil
	c.call("/t/handled", nil, &handled)
	if n := len(handled); n == 0 || handled[n-1].Topic != "email.send" || handled[n-1].Buffer.MessageID != decl.MessageID {
		t.Errorf("the flow handled %+v", handled)
	}
}

// exampleFlow: the package's example runs 5/5; the editor shows every node.
func (r *paletteRig) exampleFlow(t *testing.T) {
	nr := r.nr
	inject := func(id string) {
		t.Helper()
		if status, _, raw := nr.Do(t, http.MethodPost, "/inject/"+id, map[string]string{"Content-Type": "application/json"}, []byte(`{}`)); status != http.StatusOK {
			t.Fatalf("inject %s: %d %s", id, status, raw)
		}
	}
	inject("demo_i2") // create a task
	nr.WaitStatus(t, "demo_t_create", 15*time.Second, func(s noderedtest.Status) bool { return s.Fill == "green" })
	inject("demo_i1") // claim it, heartbeat, ACK
	nr.WaitStatus(t, "demo_t_ack", 20*time.Second, func(s noderedtest.Status) bool { return s.Fill == "green" && s.Text == "ACK DONE" })
	inject("demo_i3") // hold the catalogue's first free slot (no date in the flow), keep it, release it
	nr.WaitStatus(t, "demo_h_create", 15*time.Second, func(s noderedtest.Status) bool { return s.Fill == "green" })
	nr.WaitStatus(t, "demo_h_rel", 15*time.Second, func(s noderedtest.Status) bool {
		return s.Fill == "green" && strings.HasPrefix(s.Text, "released ")
	})
	inject("demo_i5") // enqueue a built-in type (sse.emit: no setting needed)
	nr.WaitStatus(t, "demo_e1", 15*time.Second, func(s noderedtest.Status) bool { return s.Fill == "green" })
	nr.WaitStatus(t, "demo_s1", 15*time.Second, func(s noderedtest.Status) bool { return s.Fill == "green" })
	paletteScreenshot(t, nr.Base)
}

// paletteFlowIDsDistinct fails when two flow files share a node id:
// import.js would keep only the last file's node.
func paletteFlowIDsDistinct(t *testing.T, files ...string) {
	t.Helper()
	seen := map[string]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var nodes []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &nodes); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, n := range nodes {
			if prev, ok := seen[n.ID]; ok {
				t.Fatalf("node id %q is in %s and %s", n.ID, prev, f)
			}
			seen[n.ID] = f
		}
	}
}
