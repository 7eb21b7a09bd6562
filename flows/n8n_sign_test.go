package flows_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/flowgate/flowgate/orchestrator/holds"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// n8nNodesCallScript sends requests through the node's own call() with a
// fake n8n HTTP helper and prints what would have gone out: two identical
// calls of each kind in the same second.
const n8nNodesCallScript = `const gf = require(process.argv[1]);
const creds = JSON.parse(process.argv[2]);
const sent = [];
const ctx = { helpers: { httpRequest: async (o) => { sent.push({ method: o.method, url: o.url, headers: o.headers, body: o.body || "" }); return { statusCode: 200, headers: {}, body: "{}" }; } } };
(async () => {
	for (let i = 0; i < 2; i++) {
		await gf.call(ctx, creds, "POST", "/queue/claim", { auth: "hmac", body: { worker_id: "w", limit: 1, wait_ms: 0 } });
		await gf.call(ctx, creds, "GET", "/queue/0b7e7d1e-3f7c-4c61-9a53-3b0f1b1f6d11", { auth: "hmac" });
		await gf.call(ctx, creds, "POST", "/ack", { auth: "hmac", body: { queue_id: "q", encounter_id: "Zoë 🚑", experityActions: {} }, v1ok: true });
	}
	process.stdout.write(JSON.stringify(sent));
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestN8nNodesSignsLikeGo: the package's signature module signs and verifies
// as flowgate does (the palette's cases), and the requests its call() sends —
// two identical ones in a second, a body-less GET among them — each pass
// flowgate's verifier, replay guard included.
func TestN8nNodesSignsLikeGo(t *testing.T) {
	node := nodeJS(t)
	n8nNodesBuild(t)
	lib, err := filepath.Abs(filepath.Join(n8nNodesDir, "dist", "nodes", "Flowgate", "signature.js"))
	if err != nil {
		t.Fatal(err)
	}
	signsLikeGo(t, lib, "n8n-nodes-flowgate")

	gf, _ := filepath.Abs(filepath.Join(n8nNodesDir, "dist", "nodes", "Flowgate", "GenericFunctions.js"))
	creds, _ := json.Marshal(map[string]string{"baseUrl": "http://flowgate:8080/", "hmacSecret": testSecret})
	out, err := exec.Command(node, "-e", n8nNodesCallScript, gf, string(creds)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var sent []struct {
		Method, URL, Body string
		Headers           map[string]string
	}
	if err := json.Unmarshal(out, &sent); err != nil || len(sent) != 6 {
		t.Fatalf("%v: %s", err, out)
	}
	v := verifier(t, signature.ModeHMAC, time.Now())
	for i, r := range sent {
		u := strings.TrimPrefix(r.URL, "http://flowgate:8080")
		if r.Headers["X-Signature-Version"] != "2" {
			t.Errorf("request %d (%s %s): signature version %q, want 2", i, r.Method, u, r.Headers["X-Signature-Version"])
		}
		if !strings.Contains(r.Body, `"nonce":"`) && !strings.Contains(u, "nonce=") {
			t.Errorf("request %d (%s %s) carries no nonce", i, r.Method, u)
		}
		err := v.VerifyRequest(context.Background(), signature.Request{Method: r.Method, Target: u, Header: headerFunc(r.Headers), Body: []byte(r.Body)})
		if err != nil {
			t.Errorf("request %d (%s %s %s): flowgate refuses it: %v", i, r.Method, u, r.Body, err)
		}
	}
	n8nNodesDeliveriesLikeGo(t, node, lib)

	// A hold's public ref, which the node's errors name a hold by.
	holdID := "0123456789abcdef0123456789abcdef"
	if out, err := exec.Command(node, "-e", `process.stdout.write(require(process.argv[1]).holdRef(process.argv[2]))`, gf, holdID).Output(); err != nil || string(out) != holds.Ref(holdID) {
		t.Errorf("holdRef(%s) = %q (%v), flowgate's holds.Ref %q", holdID, out, err, holds.Ref(holdID))
	}
}

// n8nNodesDeliveryScript computes deliveryMAC for each case on stdin and
// runs the Flowgate Handler Trigger's verifier (verifyDelivery, one replay
// cache) over the deliveries Go signed, printing both.
const n8nNodesDeliveryScript = `const s = require(process.argv[1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = { macs: [], verified: [] };
for (const m of input.macs) out.macs.push(s.deliveryMAC(m.secret, m.timestamp, m.messageId, m.attempt, Buffer.from(m.body, "utf8")));
const replay = new s.ReplayCache(600000);
for (const v of input.verify) {
	const bad = s.verifyDelivery(input.secret, { method: v.method, target: v.target, body: Buffer.from(v.body, "utf8"),
		headers: Object.fromEntries(Object.entries(v.headers).map(([k, x]) => [k.toLowerCase(), x])) }, replay, v.now * 1000);
	out.verified.push(bad ? bad.reason : "ok");
}
process.stdout.write(JSON.stringify(out));
`

// n8nNodesDeliveriesLikeGo: the package's deliveryMAC is flowgate's
// hmacsig.DeliveryMAC (its fixed vector, a non-ASCII body, a GET's empty
// one), and the Handler Trigger's verifier takes what flowgate's buffer
// signs (hmacsig.SignDelivery) as flowgate means it: each delivery once,
// two messages with one payload in one second both, a retry, and no
// delivery whose message id or attempt was changed or whose
// X-Buffer-Signature is missing.
func n8nNodesDeliveriesLikeGo(t *testing.T, node, lib string) {
	t.Helper()
	type macCase struct {
		Secret    string `json:"secret"`
		Timestamp string `json:"timestamp"`
		MessageID string `json:"messageId"`
		Attempt   string `json:"attempt"`
		Body      string `json:"body"`
	}
	macs := []macCase{
		{"s3cret", "1700000000", "m-1", "2", `{"a":1}`},
		{testSecret, "1767225600", "0b7e7d1e-3f7c-4c61-9a53-3b0f1b1f6d11", "1", `{"to":"Zoë@example.com","note":"🚑"}`},
		{testSecret, "1767225600", "m-get", "7", ""},
	}
	body := []byte(`{"to":"Zoë@example.com"}`)
	const target = "/webhook/flowgate/email"
	// delivery signs body as the buffer does: X-Signature (version 2, or 1)
	// and X-Buffer-Signature for id and attempt.
	delivery := func(id, attempt string, v2 bool) map[string]string {
		h := http.Header{}
		if v2 {
			ts, sig := hmacsig.SignV2([]byte(testSecret), fixedNow, http.MethodPost, target, body)
			h.Set(hmacsig.HeaderTimestamp, ts)
			h.Set(hmacsig.HeaderSignature, sig)
			h.Set(hmacsig.HeaderSignatureVersion, "2")
		} else {
			ts, sig := hmacsig.Sign([]byte(testSecret), fixedNow, body)
			h.Set(hmacsig.HeaderTimestamp, ts)
			h.Set(hmacsig.HeaderSignature, sig)
		}
		h.Set(hmacsig.HeaderMessageID, id)
		h.Set(hmacsig.HeaderAttempt, attempt)
		hmacsig.SignDelivery(h, []byte(testSecret), body)
		m := map[string]string{}
		for k := range h {
			m[k] = h.Get(k)
		}
		return m
	}
	with := func(m map[string]string, k, v string) map[string]string {
		c := map[string]string{}
		for kk, vv := range m {
			c[kk] = vv
		}
		if v == "" {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	a1, b1 := delivery("m-a", "1", true), delivery("m-b", "1", true)
	if a1[hmacsig.HeaderSignature] != b1[hmacsig.HeaderSignature] {
		t.Fatal("two messages with one body in one second should share X-Signature")
	}
	headers := []map[string]string{
		a1,
		a1,                         // the same delivery again
		b1,                         // another message, same X-Signature
		delivery("m-a", "2", true), // a retry
		with(a1, hmacsig.HeaderAttempt, "3"),
		with(a1, hmacsig.HeaderMessageID, "forged"),
		with(delivery("m-c", "1", true), hmacsig.HeaderDeliverySignature, ""),
		delivery("m-d", "1", false), // version 1
	}
	want := []string{"ok", signature.ReasonReplayed, "ok", "ok", signature.ReasonBadSignature, signature.ReasonBadSignature, signature.ReasonMissingHeaders, "ok"}
	verifies := make([]verifyCase, len(headers))
	for i, h := range headers {
		verifies[i] = verifyCase{http.MethodPost, target, string(body), h, fixedNow.Unix()}
	}
	in, _ := json.Marshal(map[string]any{"secret": testSecret, "macs": macs, "verify": verifies})
	cmd := exec.Command(node, "-e", n8nNodesDeliveryScript, lib)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got struct {
		Macs     []string `json:"macs"`
		Verified []string `json:"verified"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got.Macs) != len(macs) || len(got.Verified) != len(want) {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Macs[0] != "219787482cb65054b9ded803de564fff181c7db29079c8418232455475f2996b" {
		t.Errorf("deliveryMAC of the fixed vector: %s", got.Macs[0])
	}
	for i, m := range macs {
		if w := hex.EncodeToString(hmacsig.DeliveryMAC([]byte(m.Secret), m.Timestamp, m.MessageID, m.Attempt, []byte(m.Body))); got.Macs[i] != w {
			t.Errorf("deliveryMAC case %d: %s, Go's hmacsig.DeliveryMAC %s", i, got.Macs[i], w)
		}
	}
	for i, w := range want {
		if got.Verified[i] != w {
			t.Errorf("delivery case %d: the Handler Trigger's verifier says %q, want %q", i, got.Verified[i], w)
		}
	}
}
