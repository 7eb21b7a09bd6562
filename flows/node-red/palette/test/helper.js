"use strict";
// Test support: node-red-node-test-helper bound to a Node-RED runtime, a
// fake flowgate (an HTTP server answering from a route table and
// recording every request) and signature checks written out here, apart
// from lib/flowgate.js.
//
// Node-RED comes from FLOWGATE_NODERED_DIR (the Go test passes the pinned
// install of test/nodered-install), else from wherever require finds it.
const crypto = require("crypto");
const http = require("http");
const helper = require("node-red-node-test-helper");

const dir = process.env.FLOWGATE_NODERED_DIR;
helper.init(require.resolve("node-red", dir ? { paths: [dir] } : undefined));

/** A fake flowgate: routes["METHOD /path"] = (req) => ({status, headers, body}) or a plain object. */
class FakeFlowgate {
    constructor() {
        this.routes = {};
        this.requests = [];
        this.server = http.createServer((req, res) => this.serve(req, res));
    }

    start() {
        return new Promise((resolve) => this.server.listen(0, "127.0.0.1", () => {
            this.url = "http://127.0.0.1:" + this.server.address().port;
            resolve(this);
        }));
    }

    stop() {
        return new Promise((resolve) => {
            this.server.closeAllConnections();
            this.server.close(() => resolve());
        });
    }

    serve(req, res) {
        const chunks = [];
        req.on("data", (c) => chunks.push(c));
        req.on("end", () => {
            const raw = Buffer.concat(chunks).toString("utf8");
            const rec = { method: req.method, url: req.url, headers: req.headers, raw, body: raw ? JSON.parse(raw) : undefined };
            this.requests.push(rec);
            const path = req.url.split("?")[0];
            let route = this.routes[req.method + " " + path];
            if (!route) {
                for (const k of Object.keys(this.routes)) {
                    const [m, p] = k.split(" ");
                    if (m === req.method && p.includes("*") && new RegExp("^" + p.replace(/\*/g, "[^/]+") + "$").test(path)) {
                        route = this.routes[k];
                    }
                }
            }
            if (!route) {
                res.writeHead(404, { "Content-Type": "application/json" });
                res.end(JSON.stringify({ success: false, error: { code: "not_found", message: "no route " + req.method + " " + path } }));
                return;
            }
            const a = typeof route === "function" ? route(rec, req, res) : route;
            if (a === undefined) {
                return; // the route answers itself (a stream)
            }
            res.writeHead(a.status || 200, Object.assign({ "Content-Type": "application/json" }, a.headers || {}));
            res.end(a.body === undefined ? "" : typeof a.body === "string" ? a.body : JSON.stringify(a.body));
        });
    }

    last() {
        return this.requests[this.requests.length - 1];
    }
}

/** flowgate's error envelope. */
function envelope(code, message, details) {
    const error = { code, message, request_id: "req-1" };
    if (details) { error.details = details; }
    return { success: false, error };
}

const hex = (key, text) => crypto.createHmac("sha256", key).update(text).digest("hex");

/** expectSignedV2 checks a recorded request's version-2 signature (timestamp.METHOD target.body). */
function expectSignedV2(rec, secret) {
    const ts = rec.headers["x-timestamp"];
    if (!/^\d+$/.test(ts || "")) { throw new Error("no X-Timestamp: " + JSON.stringify(rec.headers)); }
    if (Math.abs(Date.now() / 1000 - Number(ts)) > 5) { throw new Error("X-Timestamp is not now: " + ts); }
    if (rec.headers["x-signature-version"] !== "2") { throw new Error("not version 2: " + JSON.stringify(rec.headers)); }
    const want = hex(secret, ts + "." + rec.method + " " + rec.url + "." + rec.raw);
    if (rec.headers["x-signature"] !== want) { throw new Error("bad v2 signature of " + rec.method + " " + rec.url); }
}

/** expectSignedV1 checks a version-1 signature (timestamp.body). */
function expectSignedV1(rec, secret) {
    const ts = rec.headers["x-timestamp"];
    if (rec.headers["x-signature-version"] !== undefined) { throw new Error("version header on a v1 request"); }
    if (rec.headers["x-signature"] !== hex(secret, ts + "." + rec.raw)) { throw new Error("bad v1 signature"); }
}

/** signV1 / signV2: the headers flowgate's sender puts on a POST of body. */
function signV1(secret, body, ts) {
    ts = String(ts || Math.floor(Date.now() / 1000));
    return { "X-Timestamp": ts, "X-Signature": hex(secret, ts + "." + body) };
}

function signV2(secret, method, target, body, ts) {
    ts = String(ts || Math.floor(Date.now() / 1000));
    return { "X-Timestamp": ts, "X-Signature-Version": "2", "X-Signature": hex(secret, ts + "." + method + " " + target + "." + body) };
}

/**
 * delivery adds what names a delivery of flowgate's work buffer to signed
 * headers h: X-Buffer-Message-Id, X-Buffer-Attempt (left out when
 * undefined) and X-Buffer-Signature = hex HMAC-SHA256(secret, timestamp +
 * "\n" + messageId + "\n" + attempt + "\n" + body), as flowgate's
 * hmacsig.SignDelivery sets it.
 */
function delivery(secret, h, body, messageId, attempt) {
    const out = Object.assign({}, h);
    if (messageId !== undefined) { out["X-Buffer-Message-Id"] = String(messageId); }
    if (attempt !== undefined) { out["X-Buffer-Attempt"] = String(attempt); }
    out["X-Buffer-Signature"] = hex(secret, h["X-Timestamp"] + "\n" + (messageId === undefined ? "" : messageId) + "\n" +
        (attempt === undefined ? "" : attempt) + "\n" + body);
    return out;
}

/** nextCall resolves the next call of method (send, status, error) on node n. */
function nextCall(n, method) {
    return new Promise((resolve) => {
        const on = (call) => {
            if (call.thisValue === n) {
                n.removeListener("call:" + method, on);
                resolve(call);
            }
        };
        n.on("call:" + method, on);
    });
}

/**
 * statuses lists the statuses node n showed, oldest first (the helper's
 * spies sit on Node.prototype, shared by every node).
 */
function statuses(n) {
    return n.status.getCalls().filter((c) => c.thisValue === n).map((c) => c.args[0]);
}

/** lastStatus is the status node n shows now. */
function lastStatus(n) {
    const all = statuses(n);
    return all[all.length - 1];
}

/** until polls cond every 20 ms for up to ms. */
async function until(cond, ms, what) {
    const end = Date.now() + (ms || 3000);
    while (Date.now() < end) {
        const v = await cond();
        if (v) { return v; }
        await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error("timed out waiting for " + (what || "a condition"));
}

/** settle sends msg to node n and waits until it showed two more statuses (calling, then the outcome). */
async function settle(n, msg) {
    const before = statuses(n).length;
    n.receive(msg);
    await until(() => statuses(n).length >= before + 2, 5000, "the node's outcome");
    return lastStatus(n);
}

/** config is a flowgate-config node and its credentials for a flow. */
function config(url, creds, extra) {
    return {
        node: Object.assign({ id: "cfg", type: "flowgate-config", url, signatureVersion: "2", timeout: 5 }, extra || {}),
        creds: { cfg: Object.assign({}, creds) }
    };
}

module.exports = { settle, statuses, lastStatus, helper, FakeFlowgate, envelope, expectSignedV1, expectSignedV2, signV1, signV2, delivery, nextCall, until, config, hex };
