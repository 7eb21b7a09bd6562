"use strict";
// flowgate-handler-in / flowgate-handler-out: a work buffer handler written
// as a flow. flowgate's buffer POSTs a message to an HTTP handler (today the
// webhook.forward handler, BUFFER_WEBHOOK_URL; HTTP handlers declared per
// message type where flowgate has them) and reads the answer: 2xx completes
// the message (the answer's JSON is its result), 408, 429 and 5xx are
// retried with backoff, any other 4xx sends it to the dead-letter queue
// without a retry. handler-in is that HTTP endpoint in Node-RED's httpNode;
// handler-out answers it.
const fg = require("../lib/flowgate");

// The headers flowgate's buffer sends with a handler POST.
const H_ID = "x-buffer-message-id";
const H_ATTEMPT = "x-buffer-attempt";
const H_TYPE = "x-buffer-type";
const H_CORRELATION = "x-correlation-id";

module.exports = function (RED) {
    const replay = new fg.ReplayCache(2 * fg.TOLERANCE_S * 1000);
    const limit = parseSize(RED.settings.apiMaxLength) || 5 << 20;

    // The signature covers the body's bytes, but where the editor and the
    // flows share a root path (httpAdminRoot = httpNodeRoot, the default)
    // the editor's JSON parser reads every body before httpNode sees it.
    // As Node-RED's own http-in node does for its raw routes, a middleware
    // at the top of the root app's stack reads the bytes of the handler in
    // nodes' routes first (req.flowgateRawBody) and marks the body as read.
    const rawRoutes = new Map(); // "POST:/path" → how many nodes serve it
    const routeKey = (path) => "POST:" + path.replace(/\/{2,}/g, "/").replace(/\/$/, "");
    function rawCapture(req, res, next) {
        if (req.method !== "POST" || req._body || req.readableEnded ||
            !rawRoutes.has(routeKey(String(req.originalUrl || req.url).split("?")[0]))) {
            next();
            return;
        }
        readBody(req, (err, buf) => {
            if (err) {
                refusal(res, err.status || 400, err.status === 413 ? "too_large" : "invalid", err.message);
                return;
            }
            req.flowgateRawBody = buf;
            req._body = true; // body parsers skip it
            next();
        });
    }
    if (typeof RED.httpNode === "function") {
        let root = RED.httpNode;
        while (root.parent) { root = root.parent; }
        root.use(rawCapture);
        const stack = root._router && root._router.stack;
        const i = stack ? stack.findIndex((l) => l.handle === rawCapture) : -1;
        if (i > 0) { stack.unshift(stack.splice(i, 1)[0]); }
    }

    // readBody reads req's body, at most limit bytes.
    function readBody(req, cb) {
        const chunks = [];
        let size = 0;
        let over = false;
        let called = false;
        const done = (err, buf) => {
            if (!called) {
                called = true;
                cb(err, buf);
            }
        };
        req.on("data", (c) => {
            size += c.length;
            if (size > limit) {
                over = true;
            } else {
                chunks.push(c);
            }
        });
        req.on("error", (e) => done(Object.assign(new Error("reading the body: " + e.message), { status: 400 })));
        req.on("end", () => {
            if (over) {
                done(Object.assign(new Error("body over " + limit + " bytes"), { status: 413 }));
            } else {
                done(null, Buffer.concat(chunks));
            }
        });
    }

    function answer(res, status, body, headers) {
        if (res.headersSent) { return false; }
        if (headers) { res.set(headers); }
        res.status(status).type("application/json").send(JSON.stringify(body));
        return true;
    }

    function refusal(res, status, code, message, details, headers) {
        const error = { code, message };
        if (details) { error.details = details; }
        return answer(res, status, { success: false, error }, headers);
    }

    // message reads what flowgate sent: the buffer message as an envelope
    // ({messageId|id, type, payload, …}) or, as webhook.forward sends it,
    // the payload alone with the message id in X-Buffer-Message-Id.
    function message(body, headers, fallbackType) {
        const hid = headers[H_ID] || "";
        const info = {
            messageId: hid, type: headers[H_TYPE] || "", attempt: Number(headers[H_ATTEMPT]) || 0,
            correlationId: headers[H_CORRELATION] || "", envelope: false
        };
        let payload = body;
        if (body && typeof body === "object" && !Array.isArray(body) && typeof body.type === "string" &&
            Object.prototype.hasOwnProperty.call(body, "payload")) {
            const bid = fg.first(body.messageId, body.id);
            if (bid && (!hid || hid === bid)) {
                payload = body.payload;
                info.envelope = true;
                info.messageId = bid;
                info.type = body.type;
                for (const k of ["priority", "metadata", "attemptCount", "maxRetries", "idempotencyKey", "createdAt"]) {
                    if (body[k] !== undefined) { info[k] = body[k]; }
                }
                if (!info.attempt && Number(body.attemptCount) > 0) { info.attempt = Number(body.attemptCount); }
                if (!info.correlationId && body.metadata && body.metadata.correlationId) {
                    info.correlationId = body.metadata.correlationId;
                }
            }
        }
        info.knownType = info.type !== "";
        if (!info.type) { info.type = fallbackType; }
        return { payload, info };
    }

    function HandlerIn(n) {
        RED.nodes.createNode(this, n);
        const node = this;
        node.server = RED.nodes.getNode(n.flowgate);
        node.messageType = (n.messageType || "").trim();
        node.verify = n.verify !== false && n.verify !== "false";
        node.timeoutMs = Number(n.timeout) > 0 ? Number(n.timeout) * 1000 : 0;
        let url = (n.url || "").trim();
        if (!url) {
            fg.setStatus(node, "red", "no path");
            node.warn("flowgate-handler-in: set the path flowgate posts to");
            return;
        }
        if (url[0] !== "/") { url = "/" + url; }
        node.url = url;
        if (RED.settings.httpNodeRoot === false) {
            fg.setStatus(node, "red", "httpNodeRoot disabled");
            node.warn("flowgate-handler-in: httpNodeRoot is false in settings.js, so no HTTP endpoint can be served");
            return;
        }
        const secret = node.server ? node.server.handlerSecret() : "";
        // Verify on (the default) and no handler secret: nothing can be
        // verified, so every POST is refused (503, retried by flowgate)
        // until the secret is set; signatures fail closed. Unsigned posts
        // are accepted only with verify turned off in the node.
        const noSecret = node.verify && !secret;
        if (noSecret) {
            fg.setStatus(node, "red", "no handler secret");
            let why;
            if (!node.server) {
                why = "no flowgate configuration is selected, so there is no handler secret";
            } else if (node.server.hmacOnly()) {
                why = "the flowgate configuration has an HMAC secret but no handler secret (flowgate's OUTBOUND_HMAC_SECRET, " +
                    "or the handler's own secret); the HMAC secret signs nothing flowgate sends";
            } else {
                why = "the flowgate configuration has no handler secret (flowgate's OUTBOUND_HMAC_SECRET, or the handler's own secret)";
            }
            node.warn("flowgate-handler-in " + url + ": verify is on but " + why + ". Every POST is refused (503 no_handler_secret) " +
                "until the handler secret is set; turn verify off only to accept unsigned posts.");
        } else if (!node.verify) {
            fg.setStatus(node, "yellow", "POST " + url + " (unverified)");
        } else {
            fg.setStatus(node, "grey", "POST " + url);
        }
        let count = 0;

        const handler = (req, res) => {
            if (Buffer.isBuffer(req.flowgateRawBody)) {
                receive(req, res, req.flowgateRawBody);
                return;
            }
            if (req.readableEnded || req._body) {
                // Something before this node (httpNodeMiddleware) read the
                // body: its bytes, which the signature covers, are gone.
                fg.setStatus(node, "red", "body already read");
                refusal(res, 500, "internal", "the request body was read before the flowgate handler in node got it");
                return;
            }
            readBody(req, (err, buf) => {
                if (err) {
                    refusal(res, err.status || 400, err.status === 413 ? "too_large" : "invalid", err.message);
                    return;
                }
                receive(req, res, buf);
            });
        };

        function receive(req, res, raw) {
            const headers = req.headers;
            if (noSecret) {
                refusal(res, 503, "unavailable", "this flowgate handler in node verifies flowgate's signature but has no handler secret " +
                    "to verify it with", { reason: "no_handler_secret" });
                return;
            }
            if (node.verify) {
                // X-Signature, then X-Buffer-Signature (the message id and
                // attempt msg.buffer carries), each delivery once.
                const bad = fg.verify(secret, { method: req.method, target: req.originalUrl, headers, body: raw }, replay);
                if (bad) {
                    fg.setStatus(node, "red", "401 " + bad.reason);
                    node.warn("flowgate-handler-in " + url + ": refused an unsigned or badly signed POST (" + bad.reason + ")");
                    refusal(res, 401, bad.code, bad.message, { reason: bad.reason });
                    return;
                }
            }
            let body;
            try {
                body = raw.length ? JSON.parse(raw.toString("utf8")) : null;
            } catch (e) {
                fg.setStatus(node, "red", "400 not JSON");
                refusal(res, 400, "INVALID_MESSAGE", "the body is not JSON");
                return;
            }
            const m = message(body, headers, node.messageType || "");
            if (node.messageType && m.info.knownType && m.info.type !== node.messageType) {
                fg.setStatus(node, "red", "400 type " + m.info.type);
                refusal(res, 400, "HANDLER_NOT_FOUND", "this endpoint handles " + node.messageType + ", not " + m.info.type,
                    { type: m.info.type });
                return;
            }
            delete m.info.knownType;
            const msgid = RED.util.generateId();
            res._msgid = msgid;
            Object.defineProperty(req, "headers", { value: req.headers, enumerable: true });
            const msg = { _msgid: msgid, req, res: { _res: res }, payload: m.payload, buffer: m.info, topic: m.info.type };
            if (node.timeoutMs) {
                const t = setTimeout(() => {
                    if (refusal(res, 504, "MESSAGE_TIMEOUT", "the flow did not answer within " + node.timeoutMs / 1000 + " s")) {
                        fg.setStatus(node, "red", "504 timeout");
                    }
                }, node.timeoutMs);
                res.on("finish", () => clearTimeout(t));
                res.on("close", () => clearTimeout(t));
            }
            count++;
            fg.setStatus(node, "green", "received " + count + (m.info.messageId ? " (" + m.info.messageId.slice(0, 8) + ")" : ""));
            node.send(msg);
        }

        let middleware = [];
        const hm = RED.settings.httpNodeMiddleware;
        if (typeof hm === "function") {
            middleware = [hm];
        } else if (Array.isArray(hm)) {
            middleware = hm;
        }
        const key = routeKey(RED.httpNode.path() + url);
        rawRoutes.set(key, (rawRoutes.get(key) || 0) + 1);
        RED.httpNode.post(url, ...middleware, handler);

        node.on("close", () => {
            const n = (rawRoutes.get(key) || 1) - 1;
            if (n > 0) {
                rawRoutes.set(key, n);
            } else {
                rawRoutes.delete(key);
            }
            const stack = RED.httpNode._router && RED.httpNode._router.stack;
            if (!stack) { return; }
            for (let i = stack.length - 1; i >= 0; i--) {
                const r = stack[i].route;
                if (r && r.path === url && r.methods.post && r.stack.some((l) => l.handle === handler)) {
                    stack.splice(i, 1);
                }
            }
        });
    }
    RED.nodes.registerType("flowgate-handler-in", HandlerIn);

    function HandlerOut(n) {
        RED.nodes.createNode(this, n);
        const node = this;
        node.outcome = ["auto", "done", "failed"].includes(n.outcome) ? n.outcome : "auto";
        node.statusCode = Number(n.statusCode) >= 400 && Number(n.statusCode) <= 599 ? Number(n.statusCode) : 500;
        node.errorCode = (n.errorCode || "").trim() || "HANDLER_FAILED";

        node.on("input", (msg, send, done) => {
            const res = msg.res && msg.res._res;
            if (!res || typeof res.status !== "function") {
                fg.setStatus(node, "red", "no msg.res");
                done(fg.inputError("no msg.res: this node answers a message that came from a flowgate-handler-in node", "res"));
                return;
            }
            const sc = Number(msg.statusCode);
            let failed = node.outcome === "failed";
            if (node.outcome === "auto") {
                failed = Boolean(msg.error) || sc >= 400;
            }
            const id = msg.buffer && msg.buffer.messageId ? " " + String(msg.buffer.messageId).slice(0, 8) : "";
            let sent;
            if (!failed) {
                const status = sc >= 200 && sc <= 299 ? sc : 200;
                sent = answer(res, status, msg.payload === undefined ? {} : msg.payload);
                if (sent) { fg.setStatus(node, "green", "done " + status + id); }
            } else {
                const status = sc >= 400 && sc <= 599 ? sc : node.statusCode;
                const e = msg.error;
                const code = fg.first(e && typeof e === "object" ? e.code : "", node.errorCode);
                const message = fg.first(e && typeof e === "object" ? e.message : e,
                    typeof msg.payload === "string" ? msg.payload : "", "failed in Node-RED");
                const headers = {};
                const ra = fg.first(msg.retryAfter, e && typeof e === "object" ? e.retryAfter : "");
                if (ra && /^\d+$/.test(ra)) { headers["Retry-After"] = ra; }
                sent = refusal(res, status, code, message, undefined, headers);
                if (sent) { fg.setStatus(node, "red", "failed " + status + " " + code); }
            }
            if (!sent) {
                fg.setStatus(node, "yellow", "already answered");
                node.warn("flowgate-handler-out: the request was already answered (the handler-in timeout passed?)");
            }
            done();
        });
    }
    RED.nodes.registerType("flowgate-handler-out", HandlerOut);

    function parseSize(v) {
        if (typeof v === "number") { return v; }
        const m = /^(\d+)\s*(b|kb|mb|gb)?$/i.exec(String(v || "").trim());
        if (!m) { return 0; }
        const mult = { b: 1, kb: 1 << 10, mb: 1 << 20, gb: 1 << 30 }[(m[2] || "b").toLowerCase()];
        return Number(m[1]) * mult;
    }
};
