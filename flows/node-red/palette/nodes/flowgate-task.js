"use strict";
// flowgate-task: the VM task queue, signed for the user. One node, five
// actions: create (POST /queue), claim (POST /queue/claim), heartbeat
// (POST /queue/{id}/heartbeat), ack (POST /ack) and fail (POST /fail).
// Requests are signed with version 2 of flowgate's scheme (method and path
// signed) and carry a nonce, so two identical calls in one second are two
// requests, not a replay.
const fg = require("../lib/flowgate");

const ACTIONS = ["create", "claim", "heartbeat", "ack", "fail"];
const PRIORITIES = ["HIGH", "NORMAL", "LOW"];

module.exports = function (RED) {
    function FlowgateTask(n) {
        RED.nodes.createNode(this, n);
        const node = this;
        node.server = RED.nodes.getNode(n.flowgate);
        node.action = ACTIONS.includes(n.action) ? n.action : "claim";
        node.workerId = (n.workerId || "").trim();
        node.encounterId = (n.encounterId || "").trim();
        node.priority = (n.priority || "").trim();
        node.limit = Number(n.limit) > 0 ? Math.floor(Number(n.limit)) : 1;
        node.waitMs = Number(n.waitMs) > 0 ? Math.floor(Number(n.waitMs)) : 0;
        node.errorMessage = n.errorMessage || "";
        node.ackPath = normPath(n.ackPath, "/ack");
        node.failPath = normPath(n.failPath, "/fail");
        if (!node.server) {
            fg.setStatus(node, "red", "no flowgate server");
        }
        // Calls in flight, aborted when the node closes (a redeploy): a
        // claim's long poll then ends at once, and flowgate puts back a task
        // claimed just as the connection closed.
        const inflight = new Set();
        let closing = false;
        node.on("close", () => {
            closing = true;
            for (const r of inflight) { r.destroy(); }
            inflight.clear();
        });

        node.on("input", async (msg, send, done) => {
            const action = ACTIONS.includes(msg.action) ? msg.action : node.action;
            let client;
            try {
                client = fg.clientOf(node, node.server);
            } catch (e) {
                fg.fail(node, msg, e, done);
                return;
            }
            fg.setStatus(node, "yellow", action + "…");
            try {
                switch (action) {
                case "create": await create(client, msg, send); break;
                case "claim": await claim(client, msg, send); break;
                case "heartbeat": await heartbeat(client, msg, send); break;
                case "ack": await report(client, msg, send, true); break;
                case "fail": await report(client, msg, send, false); break;
                }
                done();
            } catch (e) {
                if (closing) {
                    done(); // aborted by the redeploy: nothing to report
                    return;
                }
                fg.fail(node, msg, e, done);
            }
        });

        // workerId: msg.worker_id, the node's, then (heartbeat, ACK, FAIL)
        // the claimed task's; a claim and a heartbeat without any use
        // node-red-<node id>, ACK and FAIL send none.
        function workerId(msg, action) {
            const id = fg.first(msg.worker_id, node.workerId, action === "claim" ? "" : fg.pick(msg, "task.worker_id"));
            return id || (action === "claim" || action === "heartbeat" ? "node-red-" + node.id : "");
        }

        function queueId(msg) {
            const id = fg.first(fg.pick(msg, "task.queue_id"), msg.queue_id,
                msg.payload && typeof msg.payload === "object" ? msg.payload.queue_id : undefined);
            if (!id) {
                throw fg.inputError("no task: set msg.task (a claimed task) or msg.queue_id", "queue_id");
            }
            return id;
        }

        async function create(client, msg, send) {
            const body = {};
            const enc = fg.first(msg.encounter_id, node.encounterId);
            if (enc) { body.encounter_id = enc; }
            const qid = fg.first(msg.queue_id);
            if (qid) { body.queue_id = qid; }
            const pr = fg.first(msg.priority, node.priority).toUpperCase();
            if (pr) {
                if (!PRIORITIES.includes(pr)) {
                    throw fg.inputError("priority must be HIGH, NORMAL or LOW, got " + JSON.stringify(pr), "priority");
                }
                body.priority = pr;
            }
            if (msg.max_attempts !== undefined) { body.max_attempts = Number(msg.max_attempts); }
            if (msg.payload !== undefined) { body.payload = msg.payload; }
            const ans = await client.request("POST", "/queue", { body, auth: "hmac", nonce: true, v1ok: true, inflight });
            msg.payload = ans.body;
            msg.task = ans.body && ans.body.task;
            fg.setStatus(node, "green", (ans.body && ans.body.duplicate ? "duplicate " : "created ") + short(msg.task));
            send(msg);
        }

        async function claim(client, msg, send) {
            const limit = Number(msg.limit) > 0 ? Math.floor(Number(msg.limit)) : node.limit;
            const wait = msg.wait_ms !== undefined && Number(msg.wait_ms) >= 0 ? Math.floor(Number(msg.wait_ms)) : node.waitMs;
            const body = { worker_id: workerId(msg, "claim"), limit, wait_ms: wait };
            const ans = await client.request("POST", "/queue/claim",
                { body, auth: "hmac", nonce: true, timeout: client.timeout + wait, inflight });
            const tasks = ans.status === 204 || !ans.body ? [] : ans.body.tasks || [];
            if (!tasks.length) {
                fg.setStatus(node, "grey", "nothing to claim");
                return;
            }
            fg.setStatus(node, "green", "claimed " + (tasks.length === 1 ? tasks[0].queue_id.slice(0, 8) : tasks.length + " tasks"));
            const out = tasks.map((t, i) => {
                const m = i === 0 ? msg : RED.util.cloneMessage(msg);
                m.task = t;
                m.payload = t.payload;
                delete m.error;
                delete m.flowgateError;
                return m;
            });
            for (const m of out) { send(m); }
        }

        async function heartbeat(client, msg, send) {
            const id = queueId(msg);
            const body = { worker_id: workerId(msg, "heartbeat") };
            const ans = await client.request("POST", "/queue/" + encodeURIComponent(id) + "/heartbeat",
                { body, auth: "hmac", nonce: true, inflight });
            msg.task = ans.body && ans.body.task;
            fg.setStatus(node, "green", "heartbeat " + String((msg.task && msg.task.queue_id) || id).slice(0, 8));
            send(msg);
        }

        async function report(client, msg, send, ack) {
            const id = queueId(msg);
            const enc = fg.first(fg.pick(msg, "task.encounter_id"), msg.encounter_id);
            const body = { queue_id: id, encounter_id: enc };
            const w = workerId(msg, "report");
            if (w) { body.worker_id = w; }
            if (ack) {
                body.experityActions = msg.payload === undefined ? {} : msg.payload;
            } else {
                body.error_message = fg.first(
                    msg.error && typeof msg.error === "object" ? msg.error.message : msg.error,
                    typeof msg.payload === "string" ? msg.payload : "", node.errorMessage) || "failed in Node-RED";
            }
            const ans = await client.request("POST", ack ? node.ackPath : node.failPath,
                { body, auth: "hmac", nonce: true, v1ok: true, inflight });
            msg.payload = ans.body;
            delete msg.error;
            delete msg.flowgateError;
            const r = ans.body || {};
            let text = (ack ? "ACK " : "FAIL ") + (r.status || "");
            if (r.dlq) { text += " (DLQ)"; } else if (r.requeued) { text += " (requeued)"; }
            if (r.duplicate) { text += " (dup)"; }
            fg.setStatus(node, "green", text);
            send(msg);
        }
    }

    function normPath(p, def) {
        p = String(p || "").trim();
        if (!p) { return def; }
        return p[0] === "/" ? p : "/" + p;
    }

    function short(t) {
        if (!t || !t.queue_id) { return ""; }
        return t.queue_id.slice(0, 8) + (t.status ? " " + t.status : "");
    }

    RED.nodes.registerType("flowgate-task", FlowgateTask);
};
