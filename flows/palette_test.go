package flows_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/flowgate/flowgate/sidecar/openapi"
	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/noderedtest"
	"github.com/flowgate/flowgate/webhooks/signature"
)

// paletteDir is the Node-RED palette's package (node-red-contrib-flowgate).
// TestPaletteMocha runs the package's own tests (mocha with
// node-red-node-test-helper, every node against a fake flowgate) on the
// pinned Node-RED of test/nodered-install; TestPaletteSignsLikeGo checks its
// signatures against flowgate's verifier; TestPaletteEndToEnd
// (palette_e2e_test.go) installs the packed package into a fresh Node-RED
// and runs a flow of every node against the flowgate binary.
const paletteDir = "node-red/palette"

// paletteDeps installs the palette's dev dependencies (once per lock file:
// node-red/palette/test/install-deps). It skips the test, saying why, when
// node, npm or the npm registry is unavailable, as test/nodered-install does.
func paletteDeps(t *testing.T) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(paletteDir, "test", "install-deps"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		t.Skipf("the palette's test dependencies cannot be installed, so its mocha tests do not run: %s", strings.TrimSpace(stderr.String()))
	case err != nil:
		t.Fatalf("%s/test/install-deps: %v\n%s", paletteDir, err, stderr.String())
	}
}

// TestPaletteMocha: every node's unit tests, failing on any mocha failure.
func TestPaletteMocha(t *testing.T) {
	node := nodeJS(t)
	nr := noderedtest.Dir(t)
	paletteDeps(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, node, filepath.Join("node_modules", "mocha", "bin", "mocha.js"), "--reporter", "spec")
	cmd.Dir = paletteDir
	cmd.Env = append(flowgatetest.WithoutFlowgate(os.Environ()), "FLOWGATE_NODERED_DIR="+nr)
	out, err := cmd.CombinedOutput()
	t.Logf("mocha (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("mocha failed: %v", err)
	}
	if !strings.Contains(string(out), " passing") || strings.Contains(string(out), " failing") {
		t.Fatal("mocha reported no passing tests, or failing ones")
	}
}

// paletteSignScript signs the cases on stdin with the palette's
// lib/flowgate.js and verifies the posts Go signed, printing both; where
// the module has deliveryMac or deliveryMAC (X-Buffer-Signature), it also
// computes the delivery vectors and verifies the delivery cases in order
// against one replay cache (with verifyDelivery where the module has one).
const paletteSignScript = `const fg = require(process.argv[1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = { signed: [], verified: [] };
for (const c of input.sign) {
    out.signed.push(fg.sign(input.secret, c));
}
const check = (v, cache) => {
    const bad = fg.verify(input.secret, { method: v.method, target: v.target, body: Buffer.from(v.body, "utf8"),
        headers: Object.fromEntries(Object.entries(v.headers).map(([k, x]) => [k.toLowerCase(), x])) }, cache, "", v.now * 1000);
    return bad ? bad.reason : "ok";
};
for (const v of input.verify) {
    out.verified.push(check(v, new fg.ReplayCache(600000)));
}
// the palette: deliveryMac, and verify checks X-Buffer-Signature; the n8n
// nodes: deliveryMAC, and verifyDelivery(secret, req, replayCache, nowMs)
const dmac = fg.deliveryMac || fg.deliveryMAC;
if (typeof dmac === "function") {
    out.deliveryMacs = input.deliveryVectors.map((d) => dmac(d.secret, d.timestamp, d.messageId, d.attempt, Buffer.from(d.body, "utf8")));
    const cache = new fg.ReplayCache(600000);
    const dverify = fg.verifyDelivery ? (s, r, c, k, now) => fg.verifyDelivery(s, r, c, now) : fg.verify;
    out.deliveryVerified = input.deliveryVerify.map((v) => {
        const bad = dverify(input.secret, { method: v.method, target: v.target, body: Buffer.from(v.body, "utf8"),
            headers: Object.fromEntries(Object.entries(v.headers).map(([k, x]) => [k.toLowerCase(), x])) }, cache, "", v.now * 1000);
        return bad ? bad.reason : "ok";
    });
}
process.stdout.write(JSON.stringify(out));
`

// TestPaletteSignsLikeGo: the palette's signatures (version 1 and 2, a
// URL with a path part, non-ASCII bodies) are accepted by flowgate's own
// verifier, and the palette's verifier accepts what flowgate's sender
// (webhook.forward) signs and refuses what it must; its X-Buffer-Signature
// is hmacsig.DeliveryMAC (the fixed vector of docs/buffer.md included) and
// its verifier requires it and keys its replay guard on it.
func TestPaletteSignsLikeGo(t *testing.T) {
	lib, err := filepath.Abs(filepath.Join(paletteDir, "lib", "flowgate.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !signsLikeGo(t, lib, "the palette") {
		t.Error("the palette's lib/flowgate.js exports no deliveryMac: its handler in cannot check X-Buffer-Signature")
	}
}

// deliveryVector is the fixed X-Buffer-Signature test vector: secret
// "s3cret", timestamp "1700000000", message id "m-1", attempt "2", body
// {"a":1}.
const deliveryVector = "219787482cb65054b9ded803de564fff181c7db29079c8418232455475f2996b"

// signsLikeGo checks a JavaScript module's sign(secret, {timestamp,
// method, target, body, version}) against flowgate's signer and verifier,
// and its verify(secret, req, replayCache, key, nowMs) against what
// flowgate's sender signs (the palette's lib/flowgate.js; the n8n nodes'
// dist/nodes/Flowgate/signature.js). Where the module exports
// deliveryMac (or deliveryMAC)(secret, timestamp, messageId, attempt, body)
// it checks that against hmacsig.DeliveryMAC, and how its verifier (verify,
// or verifyDelivery where there is one) uses X-Buffer-Signature (required;
// a delivery resent with another attempt or message id refused; the replay
// guard keyed on it), and reports true.
func signsLikeGo(t *testing.T, lib, who string) bool {
	node := nodeJS(t)
	body := `{"queue_id":"0b7e7d1e-3f7c-4c61-9a53-3b0f1b1f6d11","experityActions":{"note":"Zoë 🚑"},"nonce":"n-1"}`
	type signCase struct {
		Timestamp int64  `json:"timestamp"`
		Method    string `json:"method,omitempty"`
		Target    string `json:"target,omitempty"`
		Body      string `json:"body"`
		Version   string `json:"version"`
	}
	cases := []signCase{
		{fixedNow.Unix(), "POST", "/ack", body, "1"},
		{fixedNow.Unix(), "POST", "/queue/claim", `{"worker_id":"w","limit":1,"wait_ms":0,"nonce":"x"}`, "2"},
		{fixedNow.Unix(), "POST", "/flowgate/queue/0b7e7d1e-3f7c-4c61-9a53-3b0f1b1f6d11/heartbeat", `{"worker_id":"w"}`, "2"},
		{fixedNow.Unix(), "GET", "/queue?status=PENDING", "", "2"},
	}
	fwd := []byte(`{"to":"Zoë@example.com"}`)
	ts, sig := hmacsig.Sign([]byte(testSecret), fixedNow, fwd)
	ts2, sig2 := hmacsig.SignV2([]byte(testSecret), fixedNow, "POST", "/flowgate/handler?x=1", fwd)
	// Every delivery flowgate signs names itself (X-Buffer-Message-Id,
	// X-Buffer-Attempt) and signs that (X-Buffer-Signature): what a
	// verifier that requires it accepts, and one that does not ignores.
	deliver := func(h map[string]string, body []byte, id, attempt string) map[string]string {
		hh := http.Header{}
		for k, v := range h {
			hh.Set(k, v)
		}
		hh.Set(hmacsig.HeaderMessageID, id)
		hh.Set(hmacsig.HeaderAttempt, attempt)
		hmacsig.SignDelivery(hh, []byte(testSecret), body)
		out := map[string]string{}
		for k := range hh {
			out[k] = hh.Get(k)
		}
		return out
	}
	v1 := deliver(map[string]string{"X-Timestamp": ts, "X-Signature": sig}, fwd, "m-1", "1")
	v2 := deliver(map[string]string{"X-Timestamp": ts2, "X-Signature": sig2, "X-Signature-Version": "2"}, fwd, "m-1", "1")
	with := func(h map[string]string, k, v string) map[string]string {
		out := maps.Clone(h)
		if v == "" {
			delete(out, http.CanonicalHeaderKey(k))
		} else {
			out[http.CanonicalHeaderKey(k)] = v
		}
		return out
	}
	verifies := []verifyCase{
		{"POST", "/flowgate/handler", string(fwd), v1, fixedNow.Unix()},
		{"POST", "/flowgate/handler?x=1", string(fwd), with(v2, "X-Signature", "sha256="+strings.ToUpper(sig2)), fixedNow.Unix()},
		{"POST", "/flowgate/handler", string(fwd) + " ", v1, fixedNow.Unix()},
		{"POST", "/flowgate/handler", string(fwd), v1, fixedNow.Unix() + 301},
		{"POST", "/elsewhere", string(fwd), v2, fixedNow.Unix()},
		{"POST", "/flowgate/handler", string(fwd), map[string]string{"X-Timestamp": ts}, fixedNow.Unix()},
	}
	want := []string{"ok", "ok", signature.ReasonBadSignature, signature.ReasonExpired, signature.ReasonBadSignature, signature.ReasonMissingHeaders}

	// X-Buffer-Signature: the fixed vector and Go's DeliveryMAC of other
	// inputs (an empty body and attempt, UTF-8), then deliveries verified
	// in this order against one replay cache.
	type deliveryCase struct {
		Secret    string `json:"secret"`
		Timestamp string `json:"timestamp"`
		MessageID string `json:"messageId"`
		Attempt   string `json:"attempt"`
		Body      string `json:"body"`
	}
	vectors := []deliveryCase{
		{"s3cret", "1700000000", "m-1", "2", `{"a":1}`},
		{testSecret, ts, "0b7e7d1e-3f7c-4c61-9a53-3b0f1b1f6d11", "10", string(fwd)},
		{testSecret, ts, "m", "", ""},
	}
	deliveries := []verifyCase{
		{"POST", "/flowgate/handler", string(fwd), v1, fixedNow.Unix()},                                              // ok
		{"POST", "/flowgate/handler", string(fwd), v1, fixedNow.Unix()},                                              // the same again
		{"POST", "/flowgate/handler", string(fwd), with(v1, hmacsig.HeaderAttempt, "2"), fixedNow.Unix()},            // resent as attempt 2
		{"POST", "/flowgate/handler", string(fwd), with(v1, hmacsig.HeaderMessageID, "m-forged"), fixedNow.Unix()},   // another message id
		{"POST", "/flowgate/handler", string(fwd), with(v1, hmacsig.HeaderDeliverySignature, ""), fixedNow.Unix()},   // none
		{"POST", "/flowgate/handler", string(fwd), with(v1, hmacsig.HeaderDeliverySignature, "0f"), fixedNow.Unix()}, // malformed
		{"POST", "/flowgate/handler", string(fwd), deliver(v1, fwd, "m-1", "2"), fixedNow.Unix()},                    // flowgate's retry
		{"POST", "/flowgate/handler", string(fwd), deliver(v1, fwd, "m-2", "1"), fixedNow.Unix()},                    // same payload and second, another message
		{"POST", "/flowgate/handler?x=1", string(fwd), v2, fixedNow.Unix()},                                          // version 2: its own X-Signature, the same delivery
	}
	wantDeliveries := []string{"ok", signature.ReasonReplayed, signature.ReasonBadSignature, signature.ReasonBadSignature,
		signature.ReasonMissingHeaders, signature.ReasonBadSignature, "ok", "ok", signature.ReasonReplayed}

	in, _ := json.Marshal(map[string]any{"secret": testSecret, "sign": cases, "verify": verifies,
		"deliveryVectors": vectors, "deliveryVerify": deliveries})
	cmd := exec.Command(node, "-e", paletteSignScript, lib)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got struct {
		Signed           []map[string]string `json:"signed"`
		Verified         []string            `json:"verified"`
		DeliveryMACs     []string            `json:"deliveryMacs"`
		DeliveryVerified []string            `json:"deliveryVerified"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	v := verifier(t, signature.ModeHMAC, fixedNow)
	for i, c := range cases {
		h := got.Signed[i]
		if c.Version == "1" {
			if wantTS, wantSig := signature.Sign([]byte(testSecret), fixedNow, []byte(c.Body)); h["X-Timestamp"] != wantTS || h["X-Signature"] != wantSig {
				t.Errorf("case %d: v1 headers %v, Go signs %s %s", i, h, wantTS, wantSig)
			}
			if _, ok := h["X-Signature-Version"]; ok {
				t.Errorf("case %d: a version-1 signature announces a version", i)
			}
		} else if _, wantSig := signature.SignV2([]byte(testSecret), fixedNow, c.Method, c.Target, []byte(c.Body)); h["X-Signature"] != wantSig || h["X-Signature-Version"] != "2" {
			t.Errorf("case %d: v2 headers %v, Go signs %s", i, h, wantSig)
		}
		err := v.VerifyRequest(context.Background(), signature.Request{Method: c.Method, Target: c.Target, Header: headerFunc(h), Body: []byte(c.Body)})
		if err != nil {
			t.Errorf("case %d (%s %s v%s): flowgate's verifier refuses %s's signature: %v", i, c.Method, c.Target, c.Version, who, err)
		}
	}
	for i, w := range want {
		if got.Verified[i] != w {
			t.Errorf("verify case %d: %s's verifier says %q, want %q", i, who, got.Verified[i], w)
		}
	}
	if got.DeliveryMACs == nil {
		return false
	}
	if d := vectors[0]; hex.EncodeToString(hmacsig.DeliveryMAC([]byte(d.Secret), d.Timestamp, d.MessageID, d.Attempt, []byte(d.Body))) != deliveryVector {
		t.Fatalf("hmacsig.DeliveryMAC no longer gives the fixed vector %s", deliveryVector)
	}
	for i, d := range vectors {
		if w := hex.EncodeToString(hmacsig.DeliveryMAC([]byte(d.Secret), d.Timestamp, d.MessageID, d.Attempt, []byte(d.Body))); got.DeliveryMACs[i] != w {
			t.Errorf("delivery vector %d %+v: %s's deliveryMac is %s, Go's DeliveryMAC %s", i, d, who, got.DeliveryMACs[i], w)
		}
	}
	for i, w := range wantDeliveries {
		if got.DeliveryVerified[i] != w {
			t.Errorf("delivery case %d: %s's verifier says %q, want %q", i, who, got.DeliveryVerified[i], w)
		}
	}
	return true
}

// paletteRoutes are the flowgate routes the palette's nodes call, the
// OpenAPI security scheme each needs, and the string in the node's source
// that builds the request (so the table cannot drift from the code).
var paletteRoutes = []struct {
	method, path, auth, file, source string
}{
	{"POST", "/api/buffer/enqueue", openapi.AuthBuffer, "flowgate-enqueue.js", `"/api/buffer/enqueue", { body, auth: "buffer" }`},
	{"POST", "/queue", openapi.AuthHMAC, "flowgate-task.js", `"/queue", { body, auth: "hmac"`},
	{"POST", "/queue/claim", openapi.AuthHMAC, "flowgate-task.js", `"/queue/claim",`},
	{"POST", "/queue/:queue_id/heartbeat", openapi.AuthHMAC, "flowgate-task.js", `"/queue/" + encodeURIComponent(id) + "/heartbeat"`},
	{"POST", "/ack", openapi.AuthHMAC, "flowgate-task.js", `normPath(n.ackPath, "/ack")`},
	{"POST", "/fail", openapi.AuthHMAC, "flowgate-task.js", `normPath(n.failPath, "/fail")`},
	{"POST", "/v1/holds", openapi.AuthNone, "flowgate-hold.js", `"POST", "/v1/holds", { body }`},
	{"PATCH", "/v1/holds", openapi.AuthNone, "flowgate-hold.js", `"PATCH", "/v1/holds", { body: { holdId, clientId } }`},
	{"DELETE", "/v1/holds/:holdId", openapi.AuthNone, "flowgate-hold.js", `"DELETE", "/v1/holds/" + encodeURIComponent(holdId)`},
	{"GET", "/v1/holds/stream", openapi.AuthNone, "flowgate-hold-stream.js", `"/v1/holds/stream?" + q`},
}

// TestPaletteRoutesInOpenAPI: every route the palette calls is in
// flowgate's OpenAPI document with the authentication the node sends.
func TestPaletteRoutesInOpenAPI(t *testing.T) {
	ops := map[string]openapi.Op{}
	for _, op := range openapi.Operations(openapi.Config{AckPath: "/ack", FailPath: "/fail"}) {
		ops[op.Method+" "+op.Path] = op
	}
	for _, r := range paletteRoutes {
		op, ok := ops[r.method+" "+r.path]
		if !ok {
			t.Errorf("%s %s: not in flowgate's OpenAPI document", r.method, r.path)
			continue
		}
		if op.Auth != r.auth {
			t.Errorf("%s %s: the document says auth %q, the palette sends %q", r.method, r.path, op.Auth, r.auth)
		}
		src, err := os.ReadFile(filepath.Join(paletteDir, "nodes", r.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), r.source) {
			t.Errorf("%s no longer builds %s %s as %s", r.file, r.method, r.path, r.source)
		}
	}
}

// verifyCase is one request a receiver's verify() is given in the
// cross-language signing tests (palette and n8n node alike), as JSON.
type verifyCase struct {
	Method  string            `json:"method"`
	Target  string            `json:"target"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
	Now     int64             `json:"now"`
}
