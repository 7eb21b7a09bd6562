"use strict";
// The shared part of the flowgate nodes: flowgate's request signature (the
// scheme of flowgate's webhooks/signature package), an HTTP client that
// signs, authenticates and turns flowgate's error envelope into a
// FlowgateError, a Server-Sent Events reader, the verifier of signed posts
// flowgate sends to a handler, and the status-dot helpers.
//
// Standard library only: the package installs without dependencies.

const crypto = require("crypto");
const http = require("http");
const https = require("https");

// ---- signature ---------------------------------------------------------------
//
// Version 1 (the seed's scheme): X-Signature = hex HMAC-SHA256(secret,
// timestamp + "." + body). Version 2 (sent with X-Signature-Version: 2):
// hex HMAC-SHA256(secret, timestamp + "." + METHOD + " " + target + "." +
// body), where target is the path with its query exactly as sent.
// X-Timestamp is unix seconds. flowgate accepts a timestamp within ±300 s of
// its clock and each signature once.

function mac(secret, text) {
    return crypto.createHmac("sha256", Buffer.from(String(secret), "utf8")).update(text).digest("hex");
}

/**
 * The X-Timestamp, X-Signature (and X-Signature-Version) headers of a request.
 * body: the exact string or Buffer sent ("" when none).
 */
function sign(secret, opts) {
    const ts = String(opts.timestamp !== undefined ? opts.timestamp : Math.floor(Date.now() / 1000));
    const body = opts.body === undefined || opts.body === null ? "" : opts.body;
    const headers = { "X-Timestamp": ts };
    if (String(opts.version || 2) === "1") {
        headers["X-Signature"] = mac(secret, Buffer.concat([Buffer.from(ts + ".", "utf8"), toBuffer(body)]));
    } else {
        const head = ts + "." + String(opts.method).toUpperCase() + " " + opts.target + ".";
        headers["X-Signature"] = mac(secret, Buffer.concat([Buffer.from(head, "utf8"), toBuffer(body)]));
        headers["X-Signature-Version"] = "2";
    }
    return headers;
}

function toBuffer(b) {
    return Buffer.isBuffer(b) ? b : Buffer.from(String(b), "utf8");
}

/** A fresh nonce: flowgate refuses a signed request it has seen, so two identical calls in one second must differ. */
function nonce() {
    return crypto.randomUUID();
}

// ---- errors ----------------------------------------------------------------

/**
 * FlowgateError is a refused or failed call. status is the HTTP status (0
 * when no answer came); code is flowgate's machine-readable code
 * (invalid, unauthorized, not_found, conflict, rate_limited, unavailable,
 * QUEUE_FULL, INVALID_MESSAGE, HANDLER_NOT_FOUND, …) or, without an answer,
 * "unreachable" or "client_timeout".
 */
class FlowgateError extends Error {
    constructor(message, info) {
        super(message);
        this.name = "FlowgateError";
        info = info || {};
        this.status = info.status || 0;
        this.code = info.code || "error";
        if (info.details !== undefined) { this.details = info.details; }
        if (info.requestId) { this.requestId = info.requestId; }
        if (info.retryAfter !== undefined) { this.retryAfter = info.retryAfter; }
        if (info.body !== undefined) { this.body = info.body; }
    }

    /** The msg.error object: message, code, status, details, requestId, retryAfter. */
    toJSON() {
        const o = { message: this.message, code: this.code, status: this.status };
        for (const k of ["details", "requestId", "retryAfter"]) {
            if (this[k] !== undefined) { o[k] = this[k]; }
        }
        return o;
    }

    /** A short status-dot text: "409 conflict". */
    short() {
        return (this.status ? this.status + " " : "") + this.code;
    }
}

// Bearer secrets of flowgate's open /v1 routes (docs/holds.md, "Who may act
// on a hold"): a hold id (DELETE /v1/holds/{holdId}), an appointment id
// (derived from it), a stream's token, and the clientId that goes with
// them. An error's message goes to Node-RED's log and to Catch nodes, so
// the path it names shows none of them.
const SECRET_PARAMS = ["holdId", "clientId", "streamToken", "appointmentId"];

/**
 * redactPath is path (as requested, with its query) fit for an error
 * message: /v1/holds/<id> and /v1/appointments/<id> read {holdId} and
 * {appointmentId}, and the values of the query's clientId, holdId,
 * streamToken and appointmentId read as their names in braces.
 */
function redactPath(path) {
    path = String(path);
    const i = path.indexOf("?");
    let p = i < 0 ? path : path.slice(0, i);
    p = p.replace(/^(\/v1\/holds\/)(?!stream(?:\/|$))[^/]+/, "$1{holdId}")
        .replace(/^(\/v1\/appointments\/)[^/]+/, "$1{appointmentId}");
    if (i < 0) { return p; }
    const q = path.slice(i + 1).split("&").map((kv) => {
        const eq = kv.indexOf("=");
        const k = eq < 0 ? kv : kv.slice(0, eq);
        let name = k;
        try { name = decodeURIComponent(k.replace(/\+/g, " ")); } catch (e) { /* keep it */ }
        return eq >= 0 && SECRET_PARAMS.includes(name) ? k + "={" + name + "}" : kv;
    });
    return p + "?" + q.join("&");
}

/** The FlowgateError of a non-2xx answer, from flowgate's envelope {"success":false,"error":{code,message,request_id,details}}. */
function answerError(method, path, status, headers, body) {
    let code, message, details, requestId;
    const env = body && typeof body === "object" ? body.error : undefined;
    if (env && typeof env === "object") {
        code = env.code;
        message = env.message;
        details = env.details;
        requestId = env.request_id;
    } else if (body && typeof body === "object" && typeof body.error === "string") {
        message = body.error;
        code = body.code;
    }
    if (!code) { code = codeForStatus(status); }
    if (!message) { message = typeof body === "string" && body ? body.slice(0, 200) : "HTTP " + status; }
    let retryAfter;
    const ra = headers && headers["retry-after"];
    if (ra !== undefined && /^\d+$/.test(String(ra).trim())) { retryAfter = Number(ra); }
    return new FlowgateError(method + " " + redactPath(path) + ": " + status + " " + code + ": " + message,
        { status, code, details, requestId: requestId || (headers && headers["x-request-id"]), retryAfter });
}

/** flowgate's code of an HTTP status (contracts.CodeForStatus), for answers without an envelope. */
function codeForStatus(status) {
    switch (status) {
    case 400: return "invalid";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 408: return "timeout";
    case 409: return "conflict";
    case 413: return "too_large";
    case 429: return "rate_limited";
    case 431: return "headers_too_large";
    case 503: return "unavailable";
    }
    return status >= 400 && status < 500 ? "invalid" : "internal";
}

// ---- HTTP client -------------------------------------------------------------

const DEFAULT_TIMEOUT_MS = 30000;

/**
 * Client calls one flowgate. cfg: {url, hmacSecret, webhookToken,
 * bufferToken, signatureVersion ("1" or "2"), timeout (ms)}.
 */
class Client {
    constructor(cfg) {
        this.cfg = Object.assign({}, cfg);
        this.base = String(cfg.url || "").trim().replace(/\/+$/, "");
        this.timeout = Number(cfg.timeout) > 0 ? Number(cfg.timeout) : DEFAULT_TIMEOUT_MS;
        this.agents = { "http:": new http.Agent({ keepAlive: true }), "https:": new https.Agent({ keepAlive: true }) };
    }

    close() {
        for (const a of Object.values(this.agents)) { a.destroy(); }
    }

    url(path) {
        if (!this.base) {
            throw new FlowgateError("no flowgate URL configured", { code: "config" });
        }
        let u;
        try {
            u = new URL(this.base + path);
        } catch (e) {
            throw new FlowgateError("invalid flowgate URL " + JSON.stringify(this.base), { code: "config" });
        }
        if (u.protocol !== "http:" && u.protocol !== "https:") {
            throw new FlowgateError("flowgate URL must be http:// or https://", { code: "config" });
        }
        return u;
    }

    /**
     * headers of a request to u: auth is "hmac" (the queue API and the
     * webhooks: signed with the HMAC secret, and/or the webhook bearer
     * token), "buffer" (the work buffer's bearer token) or "none".
     * v1 may be used (route accepts the seed's version 1) when the config
     * chose signature version 1.
     */
    authHeaders(auth, method, u, body, v1ok) {
        const h = {};
        if (auth === "buffer") {
            if (this.cfg.bufferToken) { h.Authorization = "Bearer " + this.cfg.bufferToken; }
        } else if (auth === "hmac") {
            if (this.cfg.hmacSecret) {
                const version = v1ok && String(this.cfg.signatureVersion) === "1" ? "1" : "2";
                Object.assign(h, sign(this.cfg.hmacSecret, { method, target: u.pathname + u.search, body, version }));
            }
            if (this.cfg.webhookToken) { h.Authorization = "Bearer " + this.cfg.webhookToken; }
        }
        return h;
    }

    /**
     * request sends one call and resolves {status, headers, body} for a 2xx
     * answer (body parsed when JSON, null when empty); anything else
     * rejects with a FlowgateError.
     * opts: {body (object, sent as JSON), auth, v1ok, nonce (add a nonce to
     * the body), timeout (ms), inflight (a Set that holds the request
     * while it runs, for its node to abort it on close)}.
     */
    request(method, path, opts) {
        opts = opts || {};
        return new Promise((resolve, reject) => {
            let u, data;
            try {
                u = this.url(path);
                if (opts.body !== undefined) {
                    let b = opts.body;
                    if (opts.nonce && b && typeof b === "object" && !Array.isArray(b) && (this.cfg.hmacSecret || "") !== "") {
                        b = Object.assign({}, b, { nonce: nonce() });
                    }
                    data = Buffer.from(JSON.stringify(b), "utf8");
                }
            } catch (e) {
                reject(e);
                return;
            }
            const headers = Object.assign({ Accept: "application/json" },
                this.authHeaders(opts.auth || "none", method, u, data || "", opts.v1ok));
            if (data) {
                headers["Content-Type"] = "application/json";
                headers["Content-Length"] = String(data.length);
            }
            const timeout = opts.timeout || this.timeout;
            const mod = u.protocol === "https:" ? https : http;
            let timer;
            let settled = false;
            const fail = (err) => {
                if (!settled) {
                    settled = true;
                    clearTimeout(timer);
                    if (opts.inflight) { opts.inflight.delete(req); }
                    reject(err);
                }
            };
            const req = mod.request(u, { method, headers, agent: this.agents[u.protocol] }, (res) => {
                const chunks = [];
                res.on("data", (c) => chunks.push(c));
                res.on("error", (e) => fail(transportError(method, path, e)));
                res.on("end", () => {
                    if (settled) { return; }
                    settled = true;
                    clearTimeout(timer);
                    if (opts.inflight) { opts.inflight.delete(req); }
                    const raw = Buffer.concat(chunks).toString("utf8");
                    let body = null;
                    if (raw.length) {
                        try {
                            body = JSON.parse(raw);
                        } catch (e) {
                            body = raw;
                        }
                    }
                    if (res.statusCode >= 200 && res.statusCode <= 299) {
                        resolve({ status: res.statusCode, headers: res.headers, body });
                    } else {
                        reject(answerError(method, path, res.statusCode, res.headers, body));
                    }
                });
            });
            timer = setTimeout(() => {
                fail(new FlowgateError(method + " " + redactPath(path) + ": no answer within " + timeout + " ms", { code: "client_timeout" }));
                req.destroy();
            }, timeout);
            req.on("error", (e) => fail(transportError(method, path, e)));
            if (opts.inflight) { opts.inflight.add(req); }
            if (data) { req.write(data); }
            req.end();
        });
    }

    /**
     * stream opens a Server-Sent Events stream (GET path) and calls
     * handlers.onOpen(res) once it answered 200, handlers.onEvent({data,
     * event, id}) per event, handlers.onRetry(ms) per retry hint, and
     * handlers.onClose(err) once when it ends (err: a FlowgateError for a
     * refusal or a transport failure, null for an orderly end). It
     * returns {close()}.
     */
    stream(path, handlers) {
        let u;
        try {
            u = this.url(path);
        } catch (e) {
            setImmediate(() => handlers.onClose(e));
            return { close() {} };
        }
        const mod = u.protocol === "https:" ? https : http;
        // keepAlive, so no "Connection: close" goes out: holdstream refuses
        // it. The agent is the stream's own, destroyed when it ends.
        const agent = new mod.Agent({ keepAlive: true, maxSockets: 1 });
        let closed = false;
        let ended = false;
        const end = (err) => {
            if (!ended) {
                ended = true;
                agent.destroy();
                handlers.onClose(err || null);
            }
        };
        const req = mod.request(u, {
            method: "GET",
            headers: { Accept: "text/event-stream", "Cache-Control": "no-cache" },
            agent
        }, (res) => {
            if (res.statusCode !== 200) {
                const chunks = [];
                res.on("data", (c) => chunks.push(c));
                res.on("end", () => {
                    const raw = Buffer.concat(chunks).toString("utf8");
                    let body = raw;
                    try { body = JSON.parse(raw); } catch (e) { /* not JSON */ }
                    end(answerError("GET", path, res.statusCode, res.headers, body));
                });
                res.on("error", (e) => end(transportError("GET", path, e)));
                return;
            }
            if (handlers.onOpen) { handlers.onOpen(res); }
            const parser = new SSEParser((ev) => handlers.onEvent(ev), (ms) => handlers.onRetry && handlers.onRetry(ms));
            res.setEncoding("utf8");
            res.on("data", (s) => parser.push(s));
            res.on("end", () => end(null));
            res.on("close", () => end(null));
            res.on("error", (e) => end(closed ? null : transportError("GET", path, e)));
        });
        req.on("error", (e) => end(closed ? null : transportError("GET", path, e)));
        req.end();
        return {
            close() {
                closed = true;
                req.destroy();
                end(null);
            }
        };
    }
}

function transportError(method, path, e) {
    return new FlowgateError(method + " " + redactPath(path) + ": " + (e && e.message ? e.message : String(e)),
        { code: "unreachable", details: { cause: e && e.code ? e.code : undefined } });
}

// ---- Server-Sent Events --------------------------------------------------------

/** SSEParser splits a text/event-stream into events (data lines joined by "\n"). */
class SSEParser {
    constructor(onEvent, onRetry) {
        this.buf = "";
        this.data = [];
        this.event = "";
        this.id = "";
        this.onEvent = onEvent;
        this.onRetry = onRetry;
    }

    push(text) {
        this.buf += text;
        let i;
        while ((i = this.buf.search(/\r\n|\r|\n/)) >= 0) {
            const line = this.buf.slice(0, i);
            const nl = this.buf[i] === "\r" && this.buf[i + 1] === "\n" ? 2 : 1;
            if (this.buf[i] === "\r" && i + 1 === this.buf.length) {
                break; // a lone \r at the end may be the first half of \r\n
            }
            this.buf = this.buf.slice(i + nl);
            this.line(line);
        }
    }

    line(line) {
        if (line === "") {
            if (this.data.length) {
                this.onEvent({ data: this.data.join("\n"), event: this.event || "message", id: this.id });
            }
            this.data = [];
            this.event = "";
            return;
        }
        if (line[0] === ":") {
            return; // comment
        }
        const c = line.indexOf(":");
        const field = c < 0 ? line : line.slice(0, c);
        let value = c < 0 ? "" : line.slice(c + 1);
        if (value[0] === " ") { value = value.slice(1); }
        switch (field) {
        case "data": this.data.push(value); break;
        case "event": this.event = value; break;
        case "id": this.id = value; break;
        case "retry":
            if (/^\d+$/.test(value) && this.onRetry) { this.onRetry(Number(value)); }
            break;
        }
    }
}

// ---- verifying a signed post flowgate sends ---------------------------------------

/**
 * ReplayCache remembers signatures for ttl ms (flowgate's own guard keeps
 * them for twice the tolerance): each is accepted once.
 */
class ReplayCache {
    constructor(ttl) {
        this.ttl = ttl;
        this.seen = new Map();
    }

    /** seen records key and reports whether it was there already. */
    check(key, now) {
        now = now || Date.now();
        if (this.seen.size > 1000) {
            for (const [k, until] of this.seen) {
                if (until <= now) { this.seen.delete(k); }
            }
        }
        const until = this.seen.get(key);
        if (until !== undefined && until > now) { return true; }
        this.seen.set(key, now + this.ttl);
        return false;
    }
}

const TOLERANCE_S = 300;

/**
 * deliveryMac is X-Buffer-Signature's value (lowercase hex): HMAC-SHA256
 * (secret, timestamp + "\n" + messageId + "\n" + attempt + "\n" + body),
 * timestamp, messageId and attempt being the X-Timestamp,
 * X-Buffer-Message-Id and X-Buffer-Attempt values exactly as sent, body
 * the raw bytes ("" when none): flowgate's hmacsig.DeliveryMAC.
 * X-Signature covers the timestamp and the body only, so it cannot tell
 * two deliveries of one payload in one second apart, nor a captured one
 * resent with another message id or attempt; this signature does.
 */
function deliveryMac(secret, timestamp, messageId, attempt, body) {
    const head = String(timestamp) + "\n" + String(messageId) + "\n" + String(attempt) + "\n";
    return mac(secret, Buffer.concat([Buffer.from(head, "utf8"), toBuffer(body === undefined || body === null ? "" : body)]));
}

/**
 * verify checks a signed delivery of flowgate's work buffer the way
 * flowgate's verifier does, then which delivery it is:
 * X-Timestamp within ±300 s; X-Signature (optionally "sha256=") the HMAC
 * of version 1 or 2 (X-Signature-Version); X-Buffer-Signature the
 * deliveryMac of X-Timestamp, X-Buffer-Message-Id, X-Buffer-Attempt and
 * the body (required: flowgate sends it on every signed delivery); each
 * delivery once. req: {method, target (path and query as received),
 * headers (lower-case keys), body (Buffer)}. It returns null or {status:
 * 401, code: "unauthorized", reason, message} with flowgate's reasons
 * (missing_headers, bad_timestamp, expired, bad_version,
 * malformed_signature, bad_signature, replayed).
 *
 * The replay guard keys on X-Buffer-Signature alone: it is one value per
 * delivery (a retry is a new delivery, with its own attempt), and neither
 * the message id nor the attempt can be changed without breaking it. A
 * key built from X-Signature and those headers let a captured request be
 * resent with another X-Buffer-Attempt or a forged X-Buffer-Message-Id.
 * replayKey is no longer used (kept so that callers passing it work).
 */
function verify(secret, req, replay, replayKey, nowMs) {
    const now = nowMs === undefined ? Date.now() : nowMs;
    const h = req.headers || {};
    const ts = String(h["x-timestamp"] || "").trim();
    let sig = String(h["x-signature"] || "").trim();
    const refuse = (reason, message) => ({ status: 401, code: "unauthorized", reason, message });
    if (!ts && !sig) { return refuse("missing_headers", "missing X-Timestamp and X-Signature headers"); }
    if (!ts) { return refuse("missing_headers", "missing X-Timestamp header"); }
    if (!sig) { return refuse("missing_headers", "missing X-Signature header"); }
    if (!/^\d{1,19}$/.test(ts)) { return refuse("bad_timestamp", "X-Timestamp must be unix time in seconds"); }
    const skew = now / 1000 - Number(ts);
    if (skew > TOLERANCE_S) { return refuse("expired", "request timestamp is too old"); }
    if (skew < -TOLERANCE_S) { return refuse("expired", "request timestamp is too far in the future"); }
    const version = String(h["x-signature-version"] || "").trim() || "1";
    if (version !== "1" && version !== "2") { return refuse("bad_version", "X-Signature-Version must be 1 or 2"); }
    if (sig.length > 7 && sig.slice(0, 7).toLowerCase() === "sha256=") { sig = sig.slice(7); }
    if (!/^[0-9a-fA-F]{64}$/.test(sig)) {
        return refuse("malformed_signature", "X-Signature must be the hex HMAC-SHA256 of the signed string");
    }
    const want = sign(secret, { timestamp: ts, method: req.method, target: req.target, body: req.body || "", version })["X-Signature"];
    if (!crypto.timingSafeEqual(Buffer.from(sig, "hex"), Buffer.from(want, "hex"))) {
        return refuse("bad_signature", "signature does not match");
    }
    // Which delivery it is: the message id and attempt as sent (the
    // values msg.buffer carries), bound to this timestamp and body.
    const dsig = String(h["x-buffer-signature"] || "").trim();
    if (!dsig) { return refuse("missing_headers", "missing X-Buffer-Signature header (which delivery it is, signed)"); }
    const dwant = deliveryMac(secret, ts, headerValue(h["x-buffer-message-id"]), headerValue(h["x-buffer-attempt"]), req.body || "");
    if (!/^[0-9a-fA-F]{64}$/.test(dsig) ||
        !crypto.timingSafeEqual(Buffer.from(dsig, "hex"), Buffer.from(dwant, "hex"))) {
        return refuse("bad_signature", "X-Buffer-Signature does not match the delivery (X-Buffer-Message-Id, X-Buffer-Attempt)");
    }
    if (replay && replay.check(dwant, now)) {
        return refuse("replayed", "request was already received");
    }
    return null;
}

// headerValue is a header's value as Go's Header.Get reads it: "" when
// absent, the first of repeated ones (Node joins most with ", ", which
// then matches nothing flowgate signed).
function headerValue(v) {
    if (v === undefined || v === null) { return ""; }
    return Array.isArray(v) ? String(v[0]) : String(v);
}

// ---- node helpers ------------------------------------------------------------------

/** The value at a dotted path of msg (msg.task.queue_id), or undefined. */
function pick(obj, path) {
    let v = obj;
    for (const k of path.split(".")) {
        if (v === null || v === undefined || typeof v !== "object") { return undefined; }
        v = v[k];
    }
    return v;
}

/** The first of the candidates that is a non-empty string or a number, as a string. */
function first() {
    for (const v of arguments) {
        if (typeof v === "string" && v.trim() !== "") { return v.trim(); }
        if (typeof v === "number" && Number.isFinite(v)) { return String(v); }
    }
    return "";
}

/** A FlowgateError for input the node cannot send (code invalid, status 0: nothing was sent). */
function inputError(message, field) {
    return new FlowgateError(message, { code: "invalid", details: field ? { field } : undefined });
}

/** setStatus shows a status dot: fill green, yellow, red or grey; text short. */
function setStatus(node, fill, text, shape) {
    node.status({ fill, shape: shape || (fill === "yellow" || fill === "grey" ? "ring" : "dot"), text: String(text).slice(0, 40) });
}

/**
 * fail reports err to Catch nodes (done(err)): Node-RED gives them
 * msg.error = {message, code (flowgate's), source}; the whole of it is in
 * msg.flowgateError = {message, code, status, details, requestId,
 * retryAfter} and the HTTP status in msg.statusCode. The status dot turns
 * red with "status code".
 */
function fail(node, msg, err, done) {
    const fe = err instanceof FlowgateError ? err : new FlowgateError(err && err.message ? err.message : String(err), { code: "internal" });
    msg.flowgateError = fe.toJSON();
    if (fe.status) { msg.statusCode = fe.status; }
    setStatus(node, "red", fe.short());
    if (done) {
        done(fe);
    } else {
        node.error(fe, msg);
    }
}

/** The Client of a node's config node, or a FlowgateError when none is set. */
function clientOf(node, config) {
    if (!config) {
        throw new FlowgateError("no flowgate server configured: pick or add a flowgate-config node", { code: "config" });
    }
    return config.client();
}

module.exports = {
    sign, nonce, verify, deliveryMac, redactPath, ReplayCache, SSEParser, Client, FlowgateError, answerError, codeForStatus,
    pick, first, inputError, setStatus, fail, clientOf, TOLERANCE_S
};
