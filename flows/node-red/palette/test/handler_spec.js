"use strict";
const assert = require("assert");
const request = require("supertest");
const { helper, signV1, signV2, delivery, nextCall, config } = require("./helper");
const { lastStatus, statuses } = require("./helper");
const configNode = require("../nodes/flowgate-config.js");
const handlerNodes = require("../nodes/flowgate-handler.js");

const SECRET = "palette-handler-secret-0123456789";

describe("flowgate-handler-in / flowgate-handler-out", function () {
    let httpNode;
    const capture = (RED) => { httpNode = RED.httpNode; };
    afterEach(async function () { await helper.unload(); });

    // load: handler-in at /flowgate/email → a function of the test (fn
    // gets each msg and returns it changed, or null to answer later) →
    // handler-out.
    async function load(inProps, outProps, creds, between) {
        const c = config("http://127.0.0.1:1", creds === undefined ? { handlerSecret: SECRET } : creds);
        const flow = [c.node,
            Object.assign({ id: "in", type: "flowgate-handler-in", flowgate: "cfg", url: "/flowgate/email", verify: true, wires: [["mid"]] }, inProps),
            { id: "mid", type: "helper", wires: [["out"]] },
            Object.assign({ id: "out", type: "flowgate-handler-out", outcome: "auto", statusCode: 500, errorCode: "HANDLER_FAILED" }, outProps)];
        await helper.load([capture, configNode, handlerNodes], flow, c.creds);
        const mid = helper.getNode("mid");
        const seen = [];
        mid.on("input", (msg) => {
            seen.push(msg);
            const m = between ? between(msg) : msg;
            if (m) { mid.send(m); }
        });
        return { seen, hin: helper.getNode("in"), hout: helper.getNode("out") };
    }

    function post(body, headers, path) {
        const req = request(httpNode).post(path || "/flowgate/email").set("Content-Type", "application/json");
        for (const [k, v] of Object.entries(headers || {})) { req.set(k, v); }
        return req.send(body);
    }

    it("webhook.forward's signed POST of a payload: done answers 200 with the result", async function () {
        const { seen, hin, hout } = await load({}, {}, undefined, (m) => Object.assign(m, { payload: { sent: m.payload.to } }));
        const body = JSON.stringify({ to: "a@b.c" });
        const res = await post(body, Object.assign(delivery(SECRET, signV1(SECRET, body), body, "msg-1234567890", 1),
            { "X-Correlation-Id": "corr-9" }));
        assert.strictEqual(res.status, 200);
        assert.match(res.headers["content-type"], /^application\/json/);
        assert.deepStrictEqual(res.body, { sent: "a@b.c" });
        assert.deepStrictEqual(seen[0].buffer, { messageId: "msg-1234567890", type: "", attempt: 1, correlationId: "corr-9", envelope: false });
        assert.strictEqual(lastStatus(hin).text, "received 1 (msg-1234)");
        assert.deepStrictEqual(lastStatus(hout), { fill: "green", shape: "dot", text: "done 200 msg-1234" });
    });

    it("the whole message as an envelope: the payload is taken out; a version-2 signature works", async function () {
        const { seen } = await load({ messageType: "email.send" });
        const body = JSON.stringify({ messageId: "m-2", type: "email.send", priority: 1, payload: { to: "x" }, metadata: { correlationId: "c" }, attemptCount: 2 });
        const res = await post(body, delivery(SECRET, signV2(SECRET, "POST", "/flowgate/email", body), body));
        assert.strictEqual(res.status, 200, JSON.stringify(res.body));
        assert.deepStrictEqual(seen[0].payload, { to: "x" });
        assert.strictEqual(seen[0].topic, "email.send");
        assert.deepStrictEqual(seen[0].buffer, { messageId: "m-2", type: "email.send", attempt: 2, correlationId: "c", envelope: true,
            priority: 1, metadata: { correlationId: "c" }, attemptCount: 2 });
        assert.deepStrictEqual(res.body, { to: "x" }, "answers the msg.payload it got back");
    });

    it("refuses unsigned, forged, stale and replayed POSTs with flowgate's reasons", async function () {
        const { seen, hin } = await load({});
        const body = "{\"a\":1}";
        let res = await post(body, {});
        assert.strictEqual(res.status, 401);
        assert.deepStrictEqual(res.body, { success: false, error: { code: "unauthorized", message: "missing X-Timestamp and X-Signature headers", details: { reason: "missing_headers" } } });
        res = await post(body, delivery("another-secret-0123456789", signV1("another-secret-0123456789", body), body, "m", 1));
        assert.strictEqual(res.body.error.details.reason, "bad_signature");
        res = await post(body, delivery(SECRET, signV1(SECRET, body, Math.floor(Date.now() / 1000) - 400), body, "m", 1));
        assert.strictEqual(res.body.error.details.reason, "expired");
        res = await post(body, delivery(SECRET, signV2(SECRET, "POST", "/elsewhere", body), body, "m", 1));
        assert.strictEqual(res.body.error.details.reason, "bad_signature", "version 2 binds the path");
        const h = delivery(SECRET, signV1(SECRET, body), body, "m", 1);
        res = await post(body, h);
        assert.strictEqual(res.status, 200);
        res = await post(body, h);
        assert.strictEqual(res.status, 401);
        assert.strictEqual(res.body.error.details.reason, "replayed");
        assert.strictEqual(seen.length, 1);
        assert.strictEqual(statuses(hin).map((c) => c.text).filter((t) => t.startsWith("401")).length, 5);
    });

    it("keys the replay guard on X-Buffer-Signature: a resent delivery with another attempt or message id is refused", async function () {
        const { seen } = await load({});
        const body = "{\"a\":1}";
        const sig = signV1(SECRET, body); // one timestamp for every request below
        const h = delivery(SECRET, sig, body, "m-1", 1);
        let res = await post(body, h);
        assert.strictEqual(res.status, 200);
        // A captured delivery resent with headers X-Signature does not cover:
        // it used to be a new replay key, and the flow ran again.
        for (const [k, v] of [["X-Buffer-Attempt", "2"], ["X-Buffer-Message-Id", "m-forged"], ["X-Buffer-Message-Id", ""]]) {
            res = await post(body, Object.assign({}, h, { [k]: v }));
            assert.strictEqual(res.status, 401, k + ": " + v);
            assert.deepStrictEqual(res.body, { success: false, error: { code: "unauthorized",
                message: "X-Buffer-Signature does not match the delivery (X-Buffer-Message-Id, X-Buffer-Attempt)", details: { reason: "bad_signature" } } });
        }
        const noAttempt = Object.assign({}, h);
        delete noAttempt["X-Buffer-Attempt"];
        assert.strictEqual((await post(body, noAttempt)).body.error.details.reason, "bad_signature", "attempt left out");
        // Without X-Buffer-Signature, or a malformed one, nothing runs.
        const bare = Object.assign({}, h);
        delete bare["X-Buffer-Signature"];
        res = await post(body, bare);
        assert.strictEqual(res.status, 401);
        assert.strictEqual(res.body.error.details.reason, "missing_headers");
        assert.match(res.body.error.message, /X-Buffer-Signature/);
        for (const bad of ["zz", h["X-Buffer-Signature"].slice(1), sig["X-Signature"]]) {
            res = await post(body, Object.assign({}, h, { "X-Buffer-Signature": bad }));
            assert.strictEqual(res.body.error.details.reason, "bad_signature", bad);
        }
        assert.strictEqual(seen.length, 1, "none of the resent or forged ones ran the flow");
        // flowgate's retry of the message (attempt 2, signed by flowgate) and
        // another message with the same payload in the same second (same
        // X-Signature) are deliveries of their own.
        res = await post(body, delivery(SECRET, sig, body, "m-1", 2));
        assert.strictEqual(res.status, 200, JSON.stringify(res.body));
        res = await post(body, delivery(SECRET, sig, body, "m-2", 1));
        assert.strictEqual(res.status, 200, JSON.stringify(res.body));
        assert.deepStrictEqual(seen.map((m) => m.buffer.messageId + "#" + m.buffer.attempt), ["m-1#1", "m-1#2", "m-2#1"]);
        // ... each once.
        assert.strictEqual((await post(body, delivery(SECRET, sig, body, "m-2", 1))).body.error.details.reason, "replayed");
        // A refusal before the delivery is checked does not use it up.
        const v2 = signV2(SECRET, "POST", "/flowgate/email", body);
        const d3 = delivery(SECRET, v2, body, "m-3", 1);
        assert.strictEqual((await post(body, Object.assign({}, d3, { "X-Signature": sig["X-Signature"] }))).status, 401);
        assert.strictEqual((await post(body, d3)).status, 200);
        assert.strictEqual(seen.length, 4);
    });

    it("verify on without a handler secret refuses every POST, signed or not; verify off accepts unsigned ones", async function () {
        const body = "{\"a\":1}";
        for (const creds of [{}, { hmacSecret: SECRET }]) {
            const { seen, hin } = await load({}, {}, creds);
            assert.deepStrictEqual(lastStatus(hin), { fill: "red", shape: "dot", text: "no handler secret" });
            const warned = hin.warn.getCalls().filter((c) => c.thisValue === hin).map((c) => String(c.args[0]));
            assert.ok(warned.some((w) => /verify is on but .*no handler secret.*Every POST is refused/.test(w)), warned.join("\n"));
            for (const headers of [{}, signV1(SECRET, body), delivery(SECRET, signV1(SECRET, body), body, "m", 1)]) {
                const res = await post(body, headers);
                assert.strictEqual(res.status, 503, JSON.stringify(creds));
                assert.strictEqual(res.body.success, false);
                assert.strictEqual(res.body.error.code, "unavailable");
                assert.strictEqual(res.body.error.details.reason, "no_handler_secret");
            }
            assert.strictEqual(seen.length, 0);
            await helper.unload();
        }
        // No configuration node at all: the same.
        await helper.load([capture, configNode, handlerNodes], [
            { id: "in", type: "flowgate-handler-in", url: "/flowgate/email", wires: [["out"]] },
            { id: "out", type: "flowgate-handler-out", outcome: "done" }]);
        assert.deepStrictEqual(lastStatus(helper.getNode("in")), { fill: "red", shape: "dot", text: "no handler secret" });
        assert.strictEqual((await post(body, {})).status, 503, "verify defaults to on");
        await helper.unload();
        const { seen: open, hin } = await load({ verify: false }, {}, {});
        assert.deepStrictEqual(lastStatus(hin), { fill: "yellow", shape: "ring", text: "POST /flowgate/email (unverified)" });
        assert.strictEqual((await post(body, {})).status, 200, "verify off: no secret needed");
        assert.strictEqual(open.length, 1);
    });

    it("failed: msg.error answers 500 with flowgate's envelope; a 4xx status and Retry-After pass", async function () {
        let n = 0;
        const { hout } = await load({ verify: false }, {}, undefined, (m) => {
            n++;
            if (n === 1) { m.error = { message: "SMTP refused", source: { id: "x" } }; }
            if (n === 2) { m.error = { message: "no such address", code: "BAD_ADDRESS" }; m.statusCode = 422; }
            if (n === 3) { m.error = "slow down"; m.statusCode = 429; m.retryAfter = 7; }
            return m;
        });
        let res = await post("{}", {});
        assert.strictEqual(res.status, 500);
        assert.deepStrictEqual(res.body, { success: false, error: { code: "HANDLER_FAILED", message: "SMTP refused" } });
        assert.deepStrictEqual(lastStatus(hout), { fill: "red", shape: "dot", text: "failed 500 HANDLER_FAILED" });
        res = await post("{}", {});
        assert.strictEqual(res.status, 422);
        assert.deepStrictEqual(res.body.error, { code: "BAD_ADDRESS", message: "no such address" });
        res = await post("{}", {});
        assert.strictEqual(res.status, 429);
        assert.strictEqual(res.headers["retry-after"], "7");
        assert.strictEqual(res.body.error.message, "slow down");
    });

    it("outcome failed always fails with the node's status and code; done ignores msg.error", async function () {
        await load({ verify: false }, { outcome: "failed", statusCode: 503, errorCode: "SMTP_DOWN" });
        let res = await post("{}", {});
        assert.strictEqual(res.status, 503);
        assert.deepStrictEqual(res.body.error, { code: "SMTP_DOWN", message: "failed in Node-RED" });
        await helper.unload();
        await load({ verify: false }, { outcome: "done" }, undefined, (m) => Object.assign(m, { error: "ignored", statusCode: 202 }));
        res = await post("{\"k\":1}", {});
        assert.strictEqual(res.status, 202);
        assert.deepStrictEqual(res.body, { k: 1 });
    });

    it("a message of another type is refused: 400 HANDLER_NOT_FOUND", async function () {
        const { seen } = await load({ verify: false, messageType: "email.send" });
        let res = await post(JSON.stringify({ id: "m", type: "sms.send", payload: {} }), {});
        assert.strictEqual(res.status, 400);
        assert.strictEqual(res.body.error.code, "HANDLER_NOT_FOUND");
        res = await post("{}", { "X-Buffer-Type": "sms.send" });
        assert.strictEqual(res.status, 400);
        res = await post("{}", {});
        assert.strictEqual(res.status, 200, "webhook.forward names no type");
        assert.strictEqual(seen[0].topic, "email.send");
        res = await post("not json", {});
        assert.strictEqual(res.status, 400);
        assert.strictEqual(res.body.error.code, "INVALID_MESSAGE");
    });

    it("an unanswered message gets 504 MESSAGE_TIMEOUT; a late answer is only a warning", async function () {
        let late;
        const { hout } = await load({ verify: false, timeout: 0.2 }, {}, undefined, (m) => { late = m; return null; });
        const res = await post("{}", {});
        assert.strictEqual(res.status, 504);
        assert.strictEqual(res.body.error.code, "MESSAGE_TIMEOUT");
        const warn = nextCall(hout, "warn");
        hout.receive(late);
        await warn;
        assert.strictEqual(lastStatus(hout).text, "already answered");
    });

    it("handler out without msg.res is an error", async function () {
        const { hout } = await load({ verify: false });
        const err = nextCall(hout, "error");
        hout.receive({ payload: 1 });
        assert.match((await err).args[0].message, /no msg.res/);
    });

    it("reads the raw body ahead of a JSON parser that runs first (the editor's, at the same root path)", async function () {
        const express = require("express");
        let root;
        const mount = (RED) => {
            root = express();
            root.use(express.json()); // as the editor's API, mounted at / before httpNode
            root.use("/", RED.httpNode);
        };
        const c = config("http://127.0.0.1:1", { handlerSecret: SECRET });
        await helper.load([mount, configNode, handlerNodes], [c.node,
            { id: "in", type: "flowgate-handler-in", flowgate: "cfg", url: "/flowgate/email", verify: true, wires: [["out"]] },
            { id: "out", type: "flowgate-handler-out", outcome: "done" }], c.creds);
        const body = "{ \"to\" : \"Zoë\" }"; // spacing and UTF-8 a re-encoding would change
        const res = await request(root).post("/flowgate/email").set("Content-Type", "application/json").set(delivery(SECRET, signV1(SECRET, body), body, "m", 1)).send(body);
        assert.strictEqual(res.status, 200, JSON.stringify(res.body));
        assert.deepStrictEqual(res.body, { to: "Zoë" });
        const other = await request(root).post("/elsewhere").set("Content-Type", "application/json").send("{\"a\":1}");
        assert.strictEqual(other.status, 404, "other routes are left to the parser");
    });

    it("redeploying removes the endpoint", async function () {
        await load({ verify: false });
        assert.strictEqual((await post("{}", {})).status, 200);
        await helper.unload();
        assert.strictEqual((await post("{}", {})).status, 404);
    });
});
