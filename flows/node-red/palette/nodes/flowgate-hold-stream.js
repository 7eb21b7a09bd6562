"use strict";
// flowgate-hold-stream: the live holds of one appointment type
// (GET /v1/holds/stream, Server-Sent Events) as messages: one per event,
// msg.topic the event type (hold, release, confirm, heartbeat), msg.payload
// the event. It reconnects after the stream ends (lease over, flowgate
// restarting) and fetches a fresh snapshot, unless the stream was replaced
// by a newer one of the same clientId or cancelled.
//
// flowgate keeps one stream per clientId, and a clientId proves nothing
// (docs/holds.md): anyone who opens a stream with this node's id ends
// this node's stream ("replaced"). So the default id is 128 random bits,
// new each time the node starts, never in the flow: a fixed or derived
// one (the node's id is in every exported flow) lets anyone stop it.
const crypto = require("crypto");
const fg = require("../lib/flowgate");

const HOLD_EVENTS = ["hold", "release", "confirm", "heartbeat"];
// Reconnecting after these would fight the newer stream (replaced) or undo
// a deliberate cancel. With the random default id a replacement can only
// be deliberate (someone who knows the id), so it stays final, and says so.
const FINAL_REASONS = ["replaced", "client-cancel"];
const MAX_BACKOFF_MS = 60000;

/** randomClientId is an unguessable client id: 128 bits from crypto.randomBytes. */
function randomClientId() {
    return "node-red-" + crypto.randomBytes(16).toString("hex");
}

module.exports = function (RED) {
    function FlowgateHoldStream(n) {
        RED.nodes.createNode(this, n);
        const node = this;
        node.server = RED.nodes.getNode(n.flowgate);
        node.appointmentTypeId = (n.appointmentTypeId || "").trim();
        node.clientIdSet = (n.clientId || "").trim() !== "";
        node.clientId = node.clientIdSet ? n.clientId.trim() : randomClientId();
        node.leaseMs = Number(n.leaseMs) > 0 ? Math.floor(Number(n.leaseMs)) : 0;
        node.system = n.system === true || n.system === "true";
        node.autoStart = n.autoStart !== false && n.autoStart !== "false";

        let conn = null; // the open stream
        let timer = null; // a pending reconnect
        let stopped = true;
        // flowgate's retry hint, 5 s until the first stream gives one (a
        // flow may set retryMs, which the editor does not show: tests do)
        let retryMs = Number(n.retryMs) > 0 ? Number(n.retryMs) : 5000;
        let backoff = 0;
        let typeId = node.appointmentTypeId;
        let clientId = node.clientId;
        let lastEnd = "";

        function connect() {
            clearTimeout(timer);
            timer = null;
            if (conn) {
                const old = conn;
                conn = null; // its onClose is then ignored
                old.close();
            }
            if (!node.server) {
                fg.setStatus(node, "red", "no flowgate server");
                return;
            }
            if (!typeId) {
                fg.setStatus(node, "red", "no appointmentTypeId");
                return;
            }
            stopped = false;
            lastEnd = "";
            let q = "appointmentTypeId=" + encodeURIComponent(typeId) + "&clientId=" + encodeURIComponent(clientId);
            if (node.leaseMs) { q += "&leaseMs=" + node.leaseMs; }
            fg.setStatus(node, "yellow", "connecting");
            let client;
            try {
                client = fg.clientOf(node, node.server);
            } catch (e) {
                fg.setStatus(node, "red", e.code);
                node.error(e);
                return;
            }
            const mine = client.stream("/v1/holds/stream?" + q, {
                onRetry: (ms) => { retryMs = ms; },
                onEvent: (ev) => onEvent(ev),
                onClose: (err) => {
                    if (conn !== mine) { return; }
                    conn = null;
                    onClose(err);
                }
            });
            conn = mine;
        }

        function onEvent(ev) {
            let data;
            try {
                data = JSON.parse(ev.data);
            } catch (e) {
                node.warn("flowgate holds stream: an event that is not JSON: " + ev.data.slice(0, 200));
                return;
            }
            const type = data && data.type;
            switch (type) {
            case "connected":
                backoff = 0;
                fg.setStatus(node, "green", "connected " + typeId);
                break;
            case "end":
                lastEnd = data.reason || "";
                fg.setStatus(node, "yellow", "ended: " + lastEnd);
                break;
            }
            if (HOLD_EVENTS.includes(type) || node.system) {
                node.send({ topic: type, payload: data, appointmentTypeId: typeId, clientId });
            }
        }

        function onClose(err) {
            if (stopped) {
                return;
            }
            if (err) {
                const permanent = err.status === 400 || err.status === 404;
                fg.setStatus(node, "red", err.short());
                // err names the path without the clientId (lib redactPath), and
                // the message for Catch nodes does not carry it either.
                node.error(err, { topic: "error", flowgateError: err.toJSON(), statusCode: err.status || undefined, appointmentTypeId: typeId });
                if (permanent) {
                    stopped = true;
                    return;
                }
                backoff = Math.min(backoff ? backoff * 2 : retryMs, MAX_BACKOFF_MS);
                timer = setTimeout(connect, backoff);
                return;
            }
            if (FINAL_REASONS.includes(lastEnd)) {
                stopped = true;
                if (lastEnd === "replaced") {
                    fg.setStatus(node, "red", "stopped: replaced (client id reused)");
                    node.warn("flowgate holds stream of " + typeId + " stopped for good: flowgate ended it (\"replaced\") because another " +
                        "stream was opened with the same client id (one stream per client id). " +
                        (clientId === node.clientId && !node.clientIdSet
                            ? "The id is this node's random one, so whoever did it knows the id. "
                            : "Leave the node's client id empty (a random one is then made at each start) or make it unguessable. ") +
                        "Send msg.action \"start\" or redeploy to connect again.");
                } else {
                    fg.setStatus(node, "yellow", "stopped: " + lastEnd);
                }
                return;
            }
            fg.setStatus(node, "yellow", "reconnecting" + (lastEnd ? " (" + lastEnd + ")" : ""));
            timer = setTimeout(connect, retryMs);
        }

        function stop(text) {
            stopped = true;
            clearTimeout(timer);
            timer = null;
            if (conn) {
                const c = conn;
                conn = null;
                c.close();
            }
            if (text) { fg.setStatus(node, "grey", text); }
        }

        node.on("input", (msg, send, done) => {
            const cmd = fg.first(msg.action, typeof msg.payload === "string" ? msg.payload : "").toLowerCase();
            if (cmd === "stop") {
                stop("stopped");
            } else if (cmd === "start" || cmd === "") {
                typeId = fg.first(msg.appointmentTypeId, node.appointmentTypeId);
                clientId = fg.first(msg.clientId, node.clientId);
                backoff = 0;
                connect();
            } else {
                done(fg.inputError("msg.action must be start or stop, got " + JSON.stringify(cmd), "action"));
                return;
            }
            done();
        });

        node.on("close", (removed, done) => {
            stop("");
            node.status({});
            done();
        });

        if (node.autoStart) {
            connect();
        } else {
            fg.setStatus(node, "grey", "idle");
        }
    }
    RED.nodes.registerType("flowgate-hold-stream", FlowgateHoldStream);
};
