"use strict";
const assert = require("assert");
const { helper, FakeFlowgate, envelope, nextCall, until, config } = require("./helper");
const { lastStatus, statuses } = require("./helper");
const configNode = require("../nodes/flowgate-config.js");
const streamNode = require("../nodes/flowgate-hold-stream.js");
const fgLib = require("../lib/flowgate.js");

// a hold event as flowgate sends it: holdId is the hold's public ref, no clientId
const hold = (type, id, extra) => Object.assign({ type, holdId: id, appointmentTypeId: "consultation",
    specialistId: "dr-a", slotStartDate: "2026-03-17T09:00:00Z", slotEndDate: "2026-03-17T09:30:00Z",
    holdExpiresAt: "2026-03-17T08:05:00Z", face: "web", isOwnHold: false }, extra || {});

/** frames: an SSE stream the way flowgate writes it (a retry hint, data-only events). */
function frames(events) {
    return "retry: 50\n\n" + events.map((e) => "data: " + JSON.stringify(e) + "\n\n").join("");
}

describe("flowgate-hold-stream", function () {
    let fake;
    let streams; // the open streams' responses
    beforeEach(async function () {
        fake = await new FakeFlowgate().start();
        streams = [];
    });
    afterEach(async function () {
        await helper.unload();
        await fake.stop();
    });

    // serve answers each GET with script(n) (n: the how-many-th stream): the
    // events, then end the response or leave it open.
    function serve(script) {
        fake.routes["GET /v1/holds/stream"] = (rec, req, res) => {
            const n = streams.length;
            streams.push(res);
            const s = script(n, rec);
            res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache" });
            // split mid-line to check the parser joins chunks
            const text = frames(s.events);
            res.write(text.slice(0, 17));
            setTimeout(() => {
                res.write(text.slice(17));
                if (s.end) { res.end(); }
            }, 10);
            return undefined;
        };
    }

    async function load(props) {
        const c = config(fake.url, {});
        const flow = [c.node, Object.assign({ id: "s", type: "flowgate-hold-stream", flowgate: "cfg", wires: [["out"]] }, props),
            { id: "out", type: "helper" }];
        await helper.load([configNode, streamNode], flow, c.creds);
        return { s: helper.getNode("s"), out: helper.getNode("out") };
    }

    it("turns hold events into messages and reconnects after the lease ends", async function () {
        serve((n) => ({
            events: [{ type: "init", connectionId: "c" + n, clientId: "board-1", appointmentTypeId: "consultation", streamToken: "t" + n, leaseMs: 1000, pingMs: 15000 },
                hold("hold", "h" + n), { type: "connected", connectionId: "c" + n }, hold("release", "h" + n),
                { type: "ping", connectionId: "c" + n }, { type: "end", connectionId: "c" + n, reason: "lease-expired" }],
            end: true
        }));
        const msgs = [];
        const { s, out } = await load({ appointmentTypeId: "consultation", clientId: "board-1", leaseMs: "1000" });
        out.on("input", (m) => msgs.push(m));
        await until(() => msgs.length >= 4, 3000, "two streams' events");
        assert.deepStrictEqual(msgs.slice(0, 4).map((m) => m.topic + ":" + m.payload.holdId), ["hold:h0", "release:h0", "hold:h1", "release:h1"]);
        assert.strictEqual(msgs[0].appointmentTypeId, "consultation");
        assert.deepStrictEqual(msgs[0].payload, hold("hold", "h0"));
        const q = fake.requests[0].url;
        assert.strictEqual(q, "/v1/holds/stream?appointmentTypeId=consultation&clientId=board-1&leaseMs=1000");
        assert.strictEqual(fake.requests[0].headers.accept, "text/event-stream");
        assert.ok(statuses(s).some((c) => c.fill === "green" && c.text === "connected consultation"));
        assert.ok(statuses(s).some((c) => c.text === "ended: lease-expired"));
    });

    it("sends system events when asked; stops for good when replaced", async function () {
        serve(() => ({
            events: [{ type: "init", connectionId: "c" }, { type: "connected", connectionId: "c" }, { type: "end", connectionId: "c", reason: "replaced" }],
            end: true
        }));
        const msgs = [];
        const { s, out } = await load({ appointmentTypeId: "consultation", system: true });
        out.on("input", (m) => msgs.push(m));
        await until(() => msgs.length >= 3, 3000, "system events");
        assert.deepStrictEqual(msgs.map((m) => m.topic), ["init", "connected", "end"]);
        assert.match(fake.requests[0].url, /^\/v1\/holds\/stream\?appointmentTypeId=consultation&clientId=node-red-[0-9a-f]{32}$/);
        await until(() => lastStatus(s).text === "stopped: replaced (client id reused)", 2000, "stopped");
        assert.strictEqual(lastStatus(s).fill, "red");
        const warned = s.warn.getCalls().filter((c) => c.thisValue === s).map((c) => String(c.args[0]));
        assert.ok(warned.some((w) => /stopped for good: .*"replaced".*same client id.*random one/.test(w)), warned.join("\n"));
        await new Promise((r) => setTimeout(r, 200));
        assert.strictEqual(fake.requests.length, 1, "no reconnect after replaced");
    });

    it("without a client id it makes an unguessable one at each start, kept across reconnects, never the node's id", async function () {
        serve(() => ({ events: [{ type: "connected", connectionId: "c" }, { type: "end", connectionId: "c", reason: "lease-expired" }], end: true }));
        const ids = [];
        for (let i = 0; i < 2; i++) {
            const { s } = await load({ appointmentTypeId: "consultation", clientId: "", retryMs: 20 });
            await until(() => fake.requests.length >= 2 * (i + 1), 3000, "a reconnect");
            const mine = fake.requests.slice(2 * i).map((r) => new URL(r.url, "http://x").searchParams.get("clientId"));
            assert.strictEqual(mine[0], mine[1], "the same id after a reconnect");
            assert.match(mine[0], /^node-red-[0-9a-f]{32}$/, "128 random bits");
            assert.ok(!mine[0].includes(s.id), "not derived from the node id, which every exported flow shows");
            ids.push(mine[0]);
            await helper.unload();
            await new Promise((r) => setTimeout(r, 30));
            fake.requests.length = 2 * (i + 1);
        }
        assert.notStrictEqual(ids[0], ids[1], "a new id at each start");
    });

    it("the example flow's stream leaves the client id to the node (no fixed id)", function () {
        const demo = require("../examples/flowgate-demo.json");
        const streams = demo.filter((n) => n.type === "flowgate-hold-stream");
        assert.ok(streams.length > 0);
        for (const n of streams) { assert.strictEqual(n.clientId, "", n.id); }
    });

    it("an unknown appointment type: red 404, reported, no retry", async function () {
        fake.routes["GET /v1/holds/stream"] = { status: 404, body: envelope("not_found", "unknown appointment type nope") };
        const { s } = await load({ appointmentTypeId: "nope" });
        const err = await nextCall(s, "error");
        assert.strictEqual(err.args[1].flowgateError.code, "not_found");
        assert.strictEqual(err.args[0].message,
            "GET /v1/holds/stream?appointmentTypeId=nope&clientId={clientId}: 404 not_found: unknown appointment type nope",
            "the log line and Catch nodes do not see the client id");
        assert.ok(!JSON.stringify(err.args[1]).includes(fake.requests[0].url.split("clientId=")[1]));
        assert.strictEqual(err.args[1].flowgateError.status, 404);
        assert.deepStrictEqual(lastStatus(s), { fill: "red", shape: "dot", text: "404 not_found" });
        await new Promise((r) => setTimeout(r, 200));
        assert.strictEqual(fake.requests.length, 1);
    });

    it("503 is retried with backoff", async function () {
        let n = 0;
        fake.routes["GET /v1/holds/stream"] = (rec, req, res) => {
            n++;
            if (n === 1) {
                return { status: 503, body: envelope("unavailable", "the holds store could not answer") };
            }
            res.writeHead(200, { "Content-Type": "text/event-stream" });
            res.write(frames([{ type: "connected", connectionId: "c" }]));
            streams.push(res);
            return undefined;
        };
        const { s } = await load({ appointmentTypeId: "consultation", retryMs: 100 });
        const err = await nextCall(s, "error");
        assert.strictEqual(err.args[1].flowgateError.code, "unavailable");
        assert.strictEqual(lastStatus(s).text, "503 unavailable");
        await until(() => lastStatus(s).text === "connected consultation", 3000, "connected");
        assert.strictEqual(n, 2);
    });

    it("idle until started; start with another type; stop closes the stream", async function () {
        serve(() => ({ events: [{ type: "connected", connectionId: "c" }, hold("hold", "x", { appointmentTypeId: "cleaning" })] }));
        const msgs = [];
        const { s, out } = await load({ appointmentTypeId: "consultation", autoStart: false });
        out.on("input", (m) => msgs.push(m));
        assert.strictEqual(lastStatus(s).text, "idle");
        await new Promise((r) => setTimeout(r, 100));
        assert.strictEqual(fake.requests.length, 0);
        s.receive({ payload: "start", appointmentTypeId: "cleaning", clientId: "me" });
        await until(() => msgs.length === 1, 3000, "an event");
        assert.strictEqual(fake.requests[0].url, "/v1/holds/stream?appointmentTypeId=cleaning&clientId=me");
        const closed = new Promise((r) => streams[0].on("close", r));
        s.receive({ payload: "stop" });
        await closed;
        assert.strictEqual(lastStatus(s).text, "stopped");
        const err = nextCall(s, "error");
        s.receive({ action: "jump" });
        assert.match((await err).args[0].message, /msg.action must be start or stop/);
    });

    it("the SSE parser joins split lines, CRLF and multi-line data", function () {
        const got = [];
        const retries = [];
        const p = new fgLib.SSEParser((e) => got.push(e), (ms) => retries.push(ms));
        p.push("retry: 5000\r");
        p.push("\n\r\ndata: {\"a\":");
        p.push("1}\n\n: comment\nevent: x\nid: 7\ndata: l1\ndata: l2\n\n");
        assert.deepStrictEqual(retries, [5000]);
        assert.deepStrictEqual(got, [{ data: "{\"a\":1}", event: "message", id: "" }, { data: "l1\nl2", event: "x", id: "7" }]);
    });
});
