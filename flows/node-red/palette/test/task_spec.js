"use strict";
const assert = require("assert");
const { helper, FakeFlowgate, envelope, expectSignedV1, expectSignedV2, nextCall, config } = require("./helper");
const { lastStatus, statuses, settle, until } = require("./helper");
const configNode = require("../nodes/flowgate-config.js");
const taskNode = require("../nodes/flowgate-task.js");

const SECRET = "palette-test-secret-0123456789";
const QID = "0b7e7d1e-3f7c-4c61-9a53-3b0f1b1f6d11";

function task(extra) {
    return Object.assign({ queue_id: QID, encounter_id: "enc-1", status: "PROCESSING", priority: "NORMAL", attempts: 0,
        max_attempts: 3, payload: { patient: "Zoë" }, worker_id: "vm-1" }, extra || {});
}

describe("flowgate-task", function () {
    let fake;
    beforeEach(async function () { fake = await new FakeFlowgate().start(); });
    afterEach(async function () {
        await helper.unload();
        await fake.stop();
    });

    async function load(props, creds, cfgExtra) {
        const c = config(fake.url, creds === undefined ? { hmacSecret: SECRET } : creds, cfgExtra);
        const flow = [c.node, Object.assign({ id: "t", type: "flowgate-task", flowgate: "cfg", wires: [["out"]] }, props),
            { id: "out", type: "helper" }];
        await helper.load([configNode, taskNode], flow, c.creds);
        return { t: helper.getNode("t"), out: helper.getNode("out") };
    }

    function next(out) {
        return new Promise((resolve) => out.once("input", resolve));
    }

    it("creates a task: POST /queue signed with version 2 and a nonce", async function () {
        fake.routes["POST /queue"] = { status: 201, body: { success: true, duplicate: false, task: task({ status: "PENDING" }) } };
        const { t, out } = await load({ action: "create", encounterId: "enc-1", priority: "HIGH" });
        const got = next(out);
        const status = nextCall(t, "status");
        t.receive({ payload: { patient: "Zoë" }, max_attempts: 5 });
        const msg = await got;
        const rec = fake.last();
        assert.strictEqual(rec.method, "POST");
        assert.strictEqual(rec.url, "/queue");
        expectSignedV2(rec, SECRET);
        assert.strictEqual(rec.headers["content-type"], "application/json");
        assert.deepStrictEqual(Object.assign({}, rec.body, { nonce: "N" }),
            { encounter_id: "enc-1", priority: "HIGH", max_attempts: 5, payload: { patient: "Zoë" }, nonce: "N" });
        assert.match(rec.body.nonce, /^[0-9a-f-]{36}$/);
        assert.strictEqual(msg.task.queue_id, QID);
        assert.strictEqual(msg.payload.success, true);
        assert.strictEqual((await status).args[0].fill, "yellow");
        assert.deepStrictEqual(lastStatus(t), { fill: "green", shape: "dot", text: "created 0b7e7d1e PENDING" });
    });

    it("two equal creates in one second are two requests (different nonces, so no replay)", async function () {
        fake.routes["POST /queue"] = { status: 201, body: { success: true, task: task() } };
        const { t, out } = await load({ action: "create", encounterId: "enc-1" });
        const a = next(out);
        t.receive({ payload: { x: 1 } });
        await a;
        const b = next(out);
        t.receive({ payload: { x: 1 } });
        await b;
        const [r1, r2] = fake.requests;
        assert.notStrictEqual(r1.headers["x-signature"], r2.headers["x-signature"]);
        assert.notStrictEqual(r1.body.nonce, r2.body.nonce);
    });

    it("claims: one message per task, the payload is the task's; 204 sends nothing", async function () {
        fake.routes["POST /queue/claim"] = { body: { success: true, tasks: [task(), task({ queue_id: "q2", payload: { n: 2 } })] } };
        const { t, out } = await load({ action: "claim", workerId: "vm-7", limit: 2, waitMs: 100 });
        const msgs = [];
        out.on("input", (m) => msgs.push(m));
        t.receive({ payload: "tick" });
        await new Promise((r) => setTimeout(r, 200));
        assert.strictEqual(msgs.length, 2);
        assert.deepStrictEqual(msgs[0].payload, { patient: "Zoë" });
        assert.strictEqual(msgs[0].task.queue_id, QID);
        assert.deepStrictEqual(msgs[1].payload, { n: 2 });
        const rec = fake.last();
        expectSignedV2(rec, SECRET);
        assert.strictEqual(rec.body.worker_id, "vm-7");
        assert.strictEqual(rec.body.limit, 2);
        assert.strictEqual(rec.body.wait_ms, 100);
        assert.ok(rec.body.nonce);

        fake.routes["POST /queue/claim"] = { status: 204 };
        await settle(t, { payload: "tick", wait_ms: 0 });
        assert.strictEqual(msgs.length, 2);
        assert.strictEqual(lastStatus(t).text, "nothing to claim");
        assert.strictEqual(fake.last().body.wait_ms, 0);
    });

    it("a claim without a worker id uses node-red-<node id>", async function () {
        fake.routes["POST /queue/claim"] = { status: 204 };
        const { t } = await load({ action: "claim" });
        await settle(t, {});
        assert.strictEqual(fake.last().body.worker_id, "node-red-t");
    });

    it("heartbeats the claimed task as its worker", async function () {
        fake.routes["POST /queue/*/heartbeat"] = { body: { success: true, task: task({ heartbeat_at: "now" }) } };
        const { t, out } = await load({ action: "heartbeat" });
        const got = next(out);
        t.receive({ payload: { keep: "me" }, task: task() });
        const msg = await got;
        const rec = fake.last();
        assert.strictEqual(rec.url, "/queue/" + QID + "/heartbeat");
        expectSignedV2(rec, SECRET);
        assert.strictEqual(rec.body.worker_id, "vm-1");
        assert.deepStrictEqual(msg.payload, { keep: "me" });
        assert.strictEqual(msg.task.heartbeat_at, "now");
    });

    it("ACKs with msg.payload as experityActions", async function () {
        fake.routes["POST /ack"] = { body: { success: true, queue_id: QID, status: "DONE", attempts: 0, requeued: false, dlq: false, duplicate: false, message: "ok" } };
        const { t, out } = await load({ action: "ack" });
        const got = next(out);
        t.receive({ payload: { booked: true }, task: task() });
        const msg = await got;
        const rec = fake.last();
        expectSignedV2(rec, SECRET);
        assert.deepStrictEqual(Object.assign({}, rec.body, { nonce: "N" }),
            { queue_id: QID, encounter_id: "enc-1", worker_id: "vm-1", experityActions: { booked: true }, nonce: "N" });
        assert.strictEqual(msg.payload.status, "DONE");
        assert.strictEqual(lastStatus(t).text, "ACK DONE");
    });

    it("FAILs with msg.error.message; the answer says requeued", async function () {
        fake.routes["POST /fail"] = { body: { success: true, queue_id: QID, status: "ERROR", attempts: 1, requeued: true, dlq: false, message: "requeued" } };
        const { t, out } = await load({ action: "fail", errorMessage: "fallback" });
        const got = next(out);
        t.receive({ payload: {}, task: task(), error: { message: "Experity timed out", source: { id: "x" } } });
        const msg = await got;
        assert.strictEqual(fake.last().body.error_message, "Experity timed out");
        assert.strictEqual(fake.last().url, "/fail");
        assert.strictEqual(msg.error, undefined);
        assert.strictEqual(lastStatus(t).text, "FAIL ERROR (requeued)");
    });

    it("a refused FAIL reports flowgate's code, status and details to Catch nodes", async function () {
        fake.routes["POST /fail"] = { status: 409, body: envelope("conflict", "task is not PROCESSING", { current_status: "PENDING", reason: "not_processing" }) };
        const { t } = await load({ action: "fail" });
        const err = nextCall(t, "error");
        t.receive({ payload: "boom", task: task() });
        const call = await err;
        const msg = call.args[1];
        assert.strictEqual(fake.last().body.error_message, "boom");
        assert.strictEqual(msg.flowgateError.code, "conflict");
        assert.strictEqual(msg.flowgateError.status, 409);
        assert.strictEqual(msg.flowgateError.requestId, "req-1");
        assert.deepStrictEqual(msg.flowgateError.details, { current_status: "PENDING", reason: "not_processing" });
        assert.strictEqual(msg.statusCode, 409);
        assert.match(call.args[0].message, /409 conflict: task is not PROCESSING/);
        assert.deepStrictEqual(lastStatus(t), { fill: "red", shape: "dot", text: "409 conflict" });
    });

    it("without a task it says so and sends nothing", async function () {
        const { t } = await load({ action: "ack" });
        const err = nextCall(t, "error");
        t.receive({ payload: {} });
        const call = await err;
        assert.strictEqual(call.args[1].flowgateError.code, "invalid");
        assert.strictEqual(call.args[1].flowgateError.details.field, "queue_id");
        assert.strictEqual(fake.requests.length, 0);
    });

    it("signature version 1 signs create, ACK and FAIL the seed's way; claim stays version 2", async function () {
        fake.routes["POST /ack"] = { body: { success: true, status: "DONE" } };
        fake.routes["POST /queue/claim"] = { status: 204 };
        const { t, out } = await load({ action: "ack" }, { hmacSecret: SECRET }, { signatureVersion: "1" });
        const got = next(out);
        t.receive({ payload: {}, task: task() });
        await got;
        expectSignedV1(fake.last(), SECRET);
        await settle(t, { action: "claim" });
        expectSignedV2(fake.last(), SECRET);
    });

    it("a URL with a path signs the path flowgate sees; the webhook token goes as a bearer", async function () {
        fake.routes["POST /fg/queue/claim"] = { status: 204 };
        const c = config(fake.url + "/fg/", { hmacSecret: SECRET, webhookToken: "tok-123" });
        await helper.load([configNode, taskNode], [c.node, { id: "t", type: "flowgate-task", flowgate: "cfg", action: "claim", wires: [[]] }], c.creds);
        const t = helper.getNode("t");
        await settle(t, {});
        const rec = fake.last();
        assert.strictEqual(rec.url, "/fg/queue/claim");
        expectSignedV2(rec, SECRET);
        assert.strictEqual(rec.headers.authorization, "Bearer tok-123");
    });

    it("with only a webhook token nothing is signed", async function () {
        fake.routes["POST /queue/claim"] = { status: 204 };
        const { t } = await load({ action: "claim" }, { webhookToken: "tok-123" });
        await settle(t, {});
        const rec = fake.last();
        assert.strictEqual(rec.headers["x-signature"], undefined);
        assert.strictEqual(rec.body.nonce, undefined);
        assert.strictEqual(rec.headers.authorization, "Bearer tok-123");
    });

    it("flowgate unreachable: code unreachable, status 0", async function () {
        const c = config("http://127.0.0.1:1", { hmacSecret: SECRET });
        await helper.load([configNode, taskNode], [c.node, { id: "t", type: "flowgate-task", flowgate: "cfg", action: "claim", wires: [[]] }], c.creds);
        const t = helper.getNode("t");
        const err = nextCall(t, "error");
        t.receive({});
        const call = await err;
        assert.strictEqual(call.args[1].flowgateError.code, "unreachable");
        assert.strictEqual(call.args[1].flowgateError.status, 0);
        assert.strictEqual(lastStatus(t).text, "unreachable");
    });

    it("a redeploy ends a claim's long poll at once, reporting nothing", async function () {
        let hungUp;
        const gone = new Promise((r) => { hungUp = r; });
        fake.routes["POST /queue/claim"] = (rec, req, res) => {
            res.on("close", hungUp); // never answered: a long poll
            return undefined;
        };
        const { t } = await load({ action: "claim", waitMs: 20000 });
        t.receive({});
        await until(() => fake.requests.length === 1, 3000, "the claim");
        const after = []; // what the node reports once closed (the helper's spies are gone by then)
        t.error = (...a) => after.push(["error", a]);
        t.status = (...a) => after.push(["status", a]);
        const start = Date.now();
        await helper.unload();
        await gone;
        assert.ok(Date.now() - start < 2000, "the long poll ended with the close");
        await new Promise((r) => setTimeout(r, 50));
        assert.deepStrictEqual(after, []);
    });

    it("no configuration node: a red dot and a config error", async function () {
        await helper.load([configNode, taskNode], [{ id: "t", type: "flowgate-task", action: "claim", wires: [[]] }]);
        const t = helper.getNode("t");
        assert.strictEqual(statuses(t)[0].text, "no flowgate server");
        const err = nextCall(t, "error");
        t.receive({});
        assert.strictEqual((await err).args[1].flowgateError.code, "config");
    });
});

describe("flowgate-task in a flow with a Catch node", function () {
    let fake;
    beforeEach(async function () { fake = await new FakeFlowgate().start(); });
    afterEach(async function () {
        await helper.unload();
        await fake.stop();
    });

    it("the Catch node gets flowgate's code in msg.error, the rest in msg.flowgateError", async function () {
        fake.routes["POST /queue/claim"] = { status: 401, body: envelope("unauthorized", "signature does not match", { reason: "bad_signature" }) };
        const c = config(fake.url, { hmacSecret: "wrong-secret-0123456789" });
        const flow = [c.node, { id: "tab", type: "tab" },
            { id: "t", z: "tab", type: "flowgate-task", flowgate: "cfg", action: "claim", wires: [[]] },
            { id: "c", z: "tab", type: "catch", scope: null, uncaught: false, wires: [["caught"]] },
            { id: "caught", z: "tab", type: "helper" }];
        await helper.load([configNode, taskNode], flow, c.creds);
        const got = new Promise((r) => helper.getNode("caught").once("input", r));
        helper.getNode("t").receive({ payload: "go" });
        const msg = await got;
        assert.strictEqual(msg.error.code, "unauthorized");
        assert.match(msg.error.message, /401 unauthorized: signature does not match/);
        assert.strictEqual(msg.error.source.id, "t");
        assert.strictEqual(msg.statusCode, 401);
        assert.deepStrictEqual(msg.flowgateError.details, { reason: "bad_signature" });
        assert.strictEqual(msg.payload, "go");
    });
});
