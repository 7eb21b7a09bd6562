"use strict";
// flowgate-hold: slot holds (/v1/holds). create: POST /v1/holds;
// heartbeat: PATCH /v1/holds; release: DELETE /v1/holds/{holdId}?clientId=.
const fg = require("../lib/flowgate");

const ACTIONS = ["create", "heartbeat", "release"];

module.exports = function (RED) {
    function FlowgateHold(n) {
        RED.nodes.createNode(this, n);
        const node = this;
        node.server = RED.nodes.getNode(n.flowgate);
        node.action = ACTIONS.includes(n.action) ? n.action : "create";
        node.appointmentTypeId = (n.appointmentTypeId || "").trim();
        node.clientId = (n.clientId || "").trim();
        node.specialistId = (n.specialistId || "").trim();
        if (!node.server) {
            fg.setStatus(node, "red", "no flowgate server");
        }

        // field: msg.payload.<name>, msg.<name>, then the node's setting.
        function field(msg, name) {
            const p = msg.payload && typeof msg.payload === "object" ? msg.payload[name] : undefined;
            return fg.first(p, msg[name], node[name]);
        }

        function need(v, name) {
            if (!v) {
                throw fg.inputError(name + " is required: set msg.payload." + name + ", msg." + name + " or the node's " + name, name);
            }
            return v;
        }

        node.on("input", async (msg, send, done) => {
            const action = ACTIONS.includes(msg.action) ? msg.action : node.action;
            try {
                const client = fg.clientOf(node, node.server);
                fg.setStatus(node, "yellow", action + "…");
                if (action === "create") {
                    const body = {
                        appointmentTypeId: need(field(msg, "appointmentTypeId"), "appointmentTypeId"),
                        slotStartDate: need(field(msg, "slotStartDate"), "slotStartDate"),
                        clientId: need(field(msg, "clientId"), "clientId")
                    };
                    const sp = field(msg, "specialistId");
                    if (sp) { body.specialistId = sp; }
                    const ans = await client.request("POST", "/v1/holds", { body });
                    msg.payload = ans.body;
                    msg.hold = Object.assign({ clientId: body.clientId, appointmentTypeId: body.appointmentTypeId }, ans.body);
                    fg.setStatus(node, "green", "held " + String(ans.body.holdId || "").slice(0, 8));
                } else {
                    const holdId = need(fg.first(fg.pick(msg, "hold.holdId"), field(msg, "holdId")), "holdId");
                    const clientId = need(fg.first(fg.pick(msg, "hold.clientId"), field(msg, "clientId")), "clientId");
                    if (action === "heartbeat") {
                        const ans = await client.request("PATCH", "/v1/holds", { body: { holdId, clientId } });
                        msg.payload = ans.body;
                        if (ans.body && ans.body.ok) {
                            msg.hold = Object.assign({}, msg.hold, { holdId, clientId, holdExpiresAt: ans.body.holdExpiresAt });
                            fg.setStatus(node, "green", "kept " + holdId.slice(0, 8));
                        } else {
                            // seed 002: {ok:false}, the hold is gone (expired, released,
                            // booked or not this client's); hold the slot again.
                            fg.setStatus(node, "red", "lost " + holdId.slice(0, 8), "ring");
                        }
                    } else {
                        const ans = await client.request("DELETE", "/v1/holds/" + encodeURIComponent(holdId) +
                            "?clientId=" + encodeURIComponent(clientId));
                        msg.payload = ans.body;
                        fg.setStatus(node, "green", (ans.body && ans.body.released ? "released " : "not held ") + holdId.slice(0, 8));
                    }
                }
                delete msg.error;
                delete msg.flowgateError;
                send(msg);
                done();
            } catch (e) {
                fg.fail(node, msg, e, done);
            }
        });
    }
    RED.nodes.registerType("flowgate-hold", FlowgateHold);
};
