"use strict";
// flowgate-enqueue: POST /api/buffer/enqueue, the work buffer, with the
// buffer API's bearer token (BUFFER_API_TOKEN).
const fg = require("../lib/flowgate");

module.exports = function (RED) {
    function FlowgateEnqueue(n) {
        RED.nodes.createNode(this, n);
        const node = this;
        node.server = RED.nodes.getNode(n.flowgate);
        node.messageType = (n.messageType || "").trim();
        node.priority = n.priority === "" || n.priority === undefined ? "" : String(n.priority);
        node.maxRetries = n.maxRetries === "" || n.maxRetries === undefined ? "" : String(n.maxRetries);
        if (!node.server) {
            fg.setStatus(node, "red", "no flowgate server");
        }

        node.on("input", async (msg, send, done) => {
            try {
                const client = fg.clientOf(node, node.server);
                const body = request(msg);
                fg.setStatus(node, "yellow", "enqueue " + body.type + "…");
                const ans = await client.request("POST", "/api/buffer/enqueue", { body, auth: "buffer" });
                msg.payload = ans.body;
                delete msg.flowgateError;
                const id = String((ans.body && ans.body.messageId) || "");
                fg.setStatus(node, "green", body.type + " " + id.slice(0, 8) + " P" + (ans.body && ans.body.priority));
                send(msg);
                done();
            } catch (e) {
                fg.fail(node, msg, e, done);
            }
        });

        // request builds the BufferEnqueueRequest: type from the node or
        // msg.topic, the payload from msg.payload, the rest from msg.
        function request(msg) {
            const type = fg.first(node.messageType, msg.messageType, msg.topic);
            if (!type) {
                throw fg.inputError("no message type: set the node's Type, msg.messageType or msg.topic", "type");
            }
            if (msg.payload === undefined) {
                throw fg.inputError("msg.payload is the message's payload and is missing", "payload");
            }
            const body = { type, payload: msg.payload };
            const pr = msg.priority !== undefined ? String(msg.priority) : node.priority;
            if (pr !== "") {
                const p = Number(pr);
                if (!Number.isInteger(p) || p < 0 || p > 3) {
                    throw fg.inputError("priority must be 0 (critical) to 3 (low), got " + JSON.stringify(pr), "priority");
                }
                body.priority = p;
            }
            const mr = msg.maxRetries !== undefined ? String(msg.maxRetries) : node.maxRetries;
            if (mr !== "") {
                const r = Number(mr);
                if (!Number.isInteger(r) || r < 0) {
                    throw fg.inputError("maxRetries must be a whole number ≥ 0, got " + JSON.stringify(mr), "maxRetries");
                }
                body.maxRetries = r;
            }
            if (fg.first(msg.messageId)) { body.messageId = fg.first(msg.messageId); }
            if (fg.first(msg.idempotencyKey)) { body.idempotencyKey = fg.first(msg.idempotencyKey); }
            if (msg.metadata && typeof msg.metadata === "object") { body.metadata = msg.metadata; }
            return body;
        }
    }
    RED.nodes.registerType("flowgate-enqueue", FlowgateEnqueue);
};
