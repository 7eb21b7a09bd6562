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

        // firstType is the catalogue's first appointment type: a create
        // that names none holds a slot of it.
        async function firstType(client) {
            const ans = await client.request("GET", "/v1/appointment-types");
            const t = ((ans.body && ans.body.appointmentTypes) || [])[0];
            if (!t) {
                throw fg.inputError("appointmentTypeId is required: flowgate's catalogue has no appointment type", "appointmentTypeId");
            }
            return t.id;
        }

        // firstSlot is the type's first slot that a specialist (sp, when
        // given) is free at, from the catalogue: a create that names no
        // slotStartDate holds the next one there is.
        async function firstSlot(client, typeId, sp) {
            const q = sp ? "?specialistId=" + encodeURIComponent(sp) : "";
            const ans = await client.request("GET", "/v1/appointment-types/" + encodeURIComponent(typeId) + "/timeslots" + q);
            const slot = ((ans.body && ans.body.slots) || []).find((s) => (s.specialistIds || []).length > 0);
            if (!slot) {
                throw fg.inputError("slotStartDate is required: " + typeId + " has no free slot in the catalogue's window", "slotStartDate");
            }
            return slot.slotStartDate;
        }

        node.on("input", async (msg, send, done) => {
            const action = ACTIONS.includes(msg.action) ? msg.action : node.action;
            try {
                const client = fg.clientOf(node, node.server);
                fg.setStatus(node, "yellow", action + "…");
                if (action === "create") {
                    const clientId = need(field(msg, "clientId"), "clientId");
                    const sp = field(msg, "specialistId");
                    const typeId = field(msg, "appointmentTypeId") || await firstType(client);
                    const body = {
                        appointmentTypeId: typeId,
                        slotStartDate: field(msg, "slotStartDate") || await firstSlot(client, typeId, sp),
                        clientId
                    };
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
