"use strict";
const assert = require("assert");
const { helper, FakeFlowgate, envelope, nextCall, config } = require("./helper");
const { lastStatus, statuses } = require("./helper");
const configNode = require("../nodes/flowgate-config.js");
const enqueueNode = require("../nodes/flowgate-enqueue.js");
const holdNode = require("../nodes/flowgate-hold.js");

const TOKEN = "palette-buffer-token-0123456789";

describe("flowgate-config", function () {
    afterEach(async function () { await helper.unload(); });

    it("keeps the secrets as credentials; the handler secret never defaults to the HMAC secret", async function () {
        const c = config("http://flowgate:8080/", { hmacSecret: "s1", bufferToken: "b1" });
        await helper.load([configNode], [c.node], c.creds);
        const n = helper.getNode("cfg");
        assert.strictEqual(n.client().base, "http://flowgate:8080");
        assert.strictEqual(n.client().cfg.hmacSecret, "s1");
        assert.strictEqual(n.client().cfg.bufferToken, "b1");
        assert.strictEqual(n.handlerSecret(), "", "flowgate signs nothing it sends with HMAC_SECRET");
        assert.strictEqual(n.hmacOnly(), true);
        assert.strictEqual(n.credentials.hmacSecret, "s1");
        assert.strictEqual(n.url, "http://flowgate:8080/");
        assert.strictEqual(n.hmacSecret, undefined, "a secret is no node property");
    });

    it("a handler secret of its own wins", async function () {
        const c = config("http://flowgate:8080", { hmacSecret: "s1", handlerSecret: "h1" });
        await helper.load([configNode], [c.node], c.creds);
        assert.strictEqual(helper.getNode("cfg").handlerSecret(), "h1");
        assert.strictEqual(helper.getNode("cfg").hmacOnly(), false);
    });
});

describe("flowgate-enqueue", function () {
    let fake;
    beforeEach(async function () { fake = await new FakeFlowgate().start(); });
    afterEach(async function () {
        await helper.unload();
        await fake.stop();
    });

    async function load(props) {
        const c = config(fake.url, { bufferToken: TOKEN, hmacSecret: "not-for-the-buffer-0123" });
        const flow = [c.node, Object.assign({ id: "e", type: "flowgate-enqueue", flowgate: "cfg", wires: [["out"]] }, props),
            { id: "out", type: "helper" }];
        await helper.load([configNode, enqueueNode], flow, c.creds);
        return { e: helper.getNode("e"), out: helper.getNode("out") };
    }

    it("enqueues msg.payload with the buffer token", async function () {
        fake.routes["POST /api/buffer/enqueue"] = { status: 202, body: { success: true, messageId: "6f1c2d3e-aaaa", state: "pending", priority: 1, queue: "buffer.high" } };
        const { e, out } = await load({ messageType: "email.send", priority: "1", maxRetries: "4" });
        const got = new Promise((r) => out.once("input", r));
        e.receive({ payload: { to: "a@b.c" }, idempotencyKey: "k-1", metadata: { correlationId: "corr-1" } });
        const msg = await got;
        const rec = fake.last();
        assert.strictEqual(rec.headers.authorization, "Bearer " + TOKEN);
        assert.strictEqual(rec.headers["x-signature"], undefined);
        assert.deepStrictEqual(rec.body, { type: "email.send", payload: { to: "a@b.c" }, priority: 1, maxRetries: 4,
            idempotencyKey: "k-1", metadata: { correlationId: "corr-1" } });
        assert.strictEqual(msg.payload.messageId, "6f1c2d3e-aaaa");
        assert.deepStrictEqual(lastStatus(e), { fill: "green", shape: "dot", text: "email.send 6f1c2d3e P1" });
    });

    it("takes the type from msg.topic and msg.priority over the node's", async function () {
        fake.routes["POST /api/buffer/enqueue"] = { status: 202, body: { success: true, messageId: "m", priority: 0 } };
        const { e, out } = await load({ priority: "3" });
        const got = new Promise((r) => out.once("input", r));
        e.receive({ topic: "sms.send", payload: "hi", priority: 0, messageId: "my-id" });
        await got;
        assert.deepStrictEqual(fake.last().body, { type: "sms.send", payload: "hi", priority: 0, messageId: "my-id" });
    });

    it("QUEUE_FULL: the code, 429 and Retry-After reach msg.flowgateError", async function () {
        fake.routes["POST /api/buffer/enqueue"] = { status: 429, headers: { "Retry-After": "1" }, body: envelope("QUEUE_FULL", "the buffer is full") };
        const { e } = await load({ messageType: "email.send" });
        const err = nextCall(e, "error");
        e.receive({ payload: {} });
        const msg = (await err).args[1];
        assert.deepStrictEqual(msg.flowgateError, { message: "POST /api/buffer/enqueue: 429 QUEUE_FULL: the buffer is full", code: "QUEUE_FULL",
            status: 429, requestId: "req-1", retryAfter: 1 });
        assert.strictEqual(lastStatus(e).text, "429 QUEUE_FULL");
    });

    it("refuses bad input before sending", async function () {
        const { e } = await load({});
        let err = nextCall(e, "error");
        e.receive({ payload: {} });
        assert.strictEqual((await err).args[1].flowgateError.details.field, "type");
        err = nextCall(e, "error");
        e.receive({ topic: "x", payload: {}, priority: 7 });
        assert.strictEqual((await err).args[1].flowgateError.details.field, "priority");
        err = nextCall(e, "error");
        e.receive({ topic: "x" });
        assert.strictEqual((await err).args[1].flowgateError.details.field, "payload");
        assert.strictEqual(fake.requests.length, 0);
    });
});

describe("flowgate-hold", function () {
    let fake;
    beforeEach(async function () { fake = await new FakeFlowgate().start(); });
    afterEach(async function () {
        await helper.unload();
        await fake.stop();
    });

    async function load(props) {
        const c = config(fake.url, {});
        const flow = [c.node, Object.assign({ id: "h", type: "flowgate-hold", flowgate: "cfg", wires: [["out"]] }, props),
            { id: "out", type: "helper" }];
        await helper.load([configNode, holdNode], flow, c.creds);
        return { h: helper.getNode("h"), out: helper.getNode("out") };
    }

    const hold = { holdId: "hold-123456789", holdRef: "ref-0123456789abcdef0123456789abcdef", specialistId: "dr-a", slotStartDate: "2026-03-17T09:00:00Z",
        slotEndDate: "2026-03-17T09:30:00Z", holdExpiresAt: "2026-03-17T08:05:00Z" };

    it("without a slotStartDate holds the type's first free slot; without a type, the catalogue's first", async function () {
        fake.routes["GET /v1/appointment-types"] = { body: { appointmentTypes: [{ id: "consultation" }, { id: "cleaning" }] } };
        fake.routes["GET /v1/appointment-types/consultation/timeslots"] = { body: { slots: [
            { slotStartDate: "2026-03-17T08:30:00Z", specialistIds: [], heldSpecialistIds: ["dr-a"] },
            { slotStartDate: "2026-03-17T09:00:00Z", specialistIds: ["dr-a"], heldSpecialistIds: [] }] } };
        fake.routes["POST /v1/holds"] = { status: 201, body: hold };
        const { h, out } = await load({ action: "create" });
        const got = new Promise((r) => out.once("input", r));
        h.receive({ payload: { clientId: "demo-client" } });
        await got;
        assert.deepStrictEqual(fake.last().body, { appointmentTypeId: "consultation", slotStartDate: "2026-03-17T09:00:00Z", clientId: "demo-client" },
            "the first slot a specialist is free at, of the first type");
        fake.routes["GET /v1/appointment-types/consultation/timeslots"] = { body: { slots: [] } };
        const err = nextCall(h, "error");
        h.receive({ payload: { clientId: "demo-client", appointmentTypeId: "consultation" } });
        assert.match(String((await err).args[0]), /slotStartDate is required: consultation has no free slot/);
    });

    it("creates a hold from msg.payload and the node's type; heartbeat and release use msg.hold", async function () {
        fake.routes["POST /v1/holds"] = { status: 201, body: hold };
        fake.routes["PATCH /v1/holds"] = { body: { ok: true, holdId: hold.holdId, holdExpiresAt: "later" } };
        fake.routes["DELETE /v1/holds/*"] = { body: { released: true } };
        const { h, out } = await load({ action: "create", appointmentTypeId: "consultation" });
        let got = new Promise((r) => out.once("input", r));
        h.receive({ payload: { slotStartDate: "2026-03-17T09:00:00Z", clientId: "web-1" } });
        let msg = await got;
        assert.deepStrictEqual(fake.last().body, { appointmentTypeId: "consultation", slotStartDate: "2026-03-17T09:00:00Z", clientId: "web-1" });
        assert.strictEqual(fake.last().headers.authorization, undefined);
        assert.deepStrictEqual(msg.payload, hold);
        assert.strictEqual(msg.hold.clientId, "web-1");
        assert.strictEqual(lastStatus(h).text, "held hold-123");

        got = new Promise((r) => out.once("input", r));
        msg.action = "heartbeat";
        h.receive(msg);
        msg = await got;
        assert.deepStrictEqual(fake.last().body, { holdId: hold.holdId, clientId: "web-1" });
        assert.strictEqual(msg.hold.holdExpiresAt, "later");

        got = new Promise((r) => out.once("input", r));
        msg.action = "release";
        h.receive(msg);
        msg = await got;
        assert.strictEqual(fake.last().method, "DELETE");
        assert.strictEqual(fake.last().url, "/v1/holds/hold-123456789?clientId=web-1");
        assert.deepStrictEqual(msg.payload, { released: true });
        assert.strictEqual(lastStatus(h).text, "released hold-123");
    });

    it("a taken slot is 409 conflict; the quota 429 with retryAfter", async function () {
        fake.routes["POST /v1/holds"] = { status: 409, body: envelope("conflict", "this slot is held by someone else") };
        const { h } = await load({ action: "create", appointmentTypeId: "t", clientId: "c" });
        let err = nextCall(h, "error");
        h.receive({ slotStartDate: "2026-03-17T09:00:00Z" });
        let msg = (await err).args[1];
        assert.strictEqual(msg.flowgateError.code, "conflict");
        assert.strictEqual(msg.flowgateError.status, 409);
        fake.routes["POST /v1/holds"] = { status: 429, headers: { "Retry-After": "42" },
            body: envelope("rate_limited", "client already holds 3 slots", { reason: "quota", retryAfterSeconds: 42 }) };
        err = nextCall(h, "error");
        h.receive({ slotStartDate: "2026-03-17T09:00:00Z" });
        msg = (await err).args[1];
        assert.strictEqual(msg.flowgateError.retryAfter, 42);
        assert.strictEqual(msg.flowgateError.details.reason, "quota");
        assert.deepStrictEqual(lastStatus(h), { fill: "red", shape: "dot", text: "429 rate_limited" });
    });

    it("a refused or failed release names no hold id nor client id in its error (they are the hold's credentials)", async function () {
        const holdId = "0123456789abcdef0123456789abcdef";
        fake.routes["DELETE /v1/holds/*"] = { status: 409, body: envelope("conflict", "the hold is another client's") };
        const { h } = await load({ action: "release" });
        let err = nextCall(h, "error");
        h.receive({ hold: { holdId, clientId: "web-secret-client" } });
        let call = await err;
        assert.strictEqual(fake.last().url, "/v1/holds/" + holdId + "?clientId=web-secret-client", "the request itself carries them");
        assert.strictEqual(call.args[0].message, "DELETE /v1/holds/{holdId}?clientId={clientId}: 409 conflict: the hold is another client's");
        assert.deepStrictEqual(call.args[1].flowgateError, { message: call.args[0].message, code: "conflict", status: 409, requestId: "req-1" });
        fake.routes["DELETE /v1/holds/*"] = { status: 500, body: "internal trouble" };
        err = nextCall(h, "error");
        h.receive({ hold: { holdId, clientId: "web-secret-client" } });
        call = await err;
        assert.strictEqual(call.args[0].message, "DELETE /v1/holds/{holdId}?clientId={clientId}: 500 internal: internal trouble");
        await fake.stop();
        err = nextCall(h, "error");
        h.receive({ hold: { holdId, clientId: "web-secret-client" } });
        call = await err;
        assert.strictEqual(call.args[1].flowgateError.code, "unreachable");
        for (const m of [call.args[0].message, JSON.stringify(call.args[1].flowgateError)]) {
            assert.ok(!m.includes(holdId) && !m.includes("web-secret-client"), m);
        }
        fake = await new FakeFlowgate().start(); // for afterEach
    });

    it("redactPath hides the holds routes' credentials and keeps the rest", function () {
        const { redactPath } = require("../lib/flowgate.js");
        assert.strictEqual(redactPath("/v1/holds/abc%2Fdef?clientId=c&x=1"), "/v1/holds/{holdId}?clientId={clientId}&x=1");
        assert.strictEqual(redactPath("/v1/holds/stream?clientId=c&streamToken=t"), "/v1/holds/stream?clientId={clientId}&streamToken={streamToken}");
        assert.strictEqual(redactPath("/v1/appointments/a-1"), "/v1/appointments/{appointmentId}");
        assert.strictEqual(redactPath("/v1/appointment-types/consultation/timeslots?specialistId=dr-a"), "/v1/appointment-types/consultation/timeslots?specialistId=dr-a");
        assert.strictEqual(redactPath("/queue?status=PENDING"), "/queue?status=PENDING");
        assert.strictEqual(redactPath("/v1/holds"), "/v1/holds");
    });

    it("an expired hold's heartbeat is seed 002's {ok:false}, sent on; missing fields are named", async function () {
        fake.routes["PATCH /v1/holds"] = { body: { ok: false } };
        const { h, out } = await load({ action: "heartbeat" });
        const got = new Promise((r) => out.once("input", r));
        const hold = { holdId: "h1", clientId: "c1", holdExpiresAt: "before" };
        h.receive({ hold });
        const msg = await got;
        assert.deepStrictEqual(msg.payload, { ok: false });
        assert.deepStrictEqual(msg.hold, hold, "the lost hold is left as it was");
        assert.deepStrictEqual(lastStatus(h), { fill: "red", shape: "ring", text: "lost h1" });
        const err = nextCall(h, "error");
        h.receive({ payload: { holdId: "h1" } });
        const e = (await err).args[1].flowgateError;
        assert.strictEqual(e.code, "invalid");
        assert.strictEqual(e.details.field, "clientId");
        assert.strictEqual(fake.requests.length, 1);
    });
});
