"use strict";
// flowgate-config: where flowgate is and the secrets to call it with. The
// secrets are Node-RED credentials: kept in flows_cred.json (encrypted with
// credentialSecret), never in the flow JSON, never exported.
const fg = require("../lib/flowgate");

module.exports = function (RED) {
    function FlowgateConfig(n) {
        RED.nodes.createNode(this, n);
        this.name = n.name;
        this.url = n.url;
        this.signatureVersion = String(n.signatureVersion || "2");
        this.timeoutMs = Number(n.timeout) > 0 ? Number(n.timeout) * 1000 : 30000;
        const creds = this.credentials || {};
        let client = null;
        this.client = () => {
            if (!client) {
                client = new fg.Client({
                    url: this.url, hmacSecret: creds.hmacSecret || "", webhookToken: creds.webhookToken || "",
                    bufferToken: creds.bufferToken || "", signatureVersion: this.signatureVersion, timeout: this.timeoutMs
                });
            }
            return client;
        };
        // The secret a flowgate-handler-in node verifies flowgate's signed
        // posts with: flowgate's OUTBOUND_HMAC_SECRET, or the handler's own
        // secret: in flowgate's handlers file. Never the HMAC secret:
        // flowgate signs nothing it sends with HMAC_SECRET (a receiver
        // holding it could forge what flowgate accepts).
        this.handlerSecret = () => creds.handlerSecret || "";
        // hmacOnly: an HMAC secret but no handler secret, the set-up that
        // used to verify with the HMAC secret. A handler-in node that
        // verifies refuses every POST then, rather than accept unsigned ones.
        this.hmacOnly = () => !creds.handlerSecret && Boolean(creds.hmacSecret);
        this.on("close", () => {
            if (client) {
                client.close();
                client = null;
            }
        });
    }
    RED.nodes.registerType("flowgate-config", FlowgateConfig, {
        credentials: {
            hmacSecret: { type: "password" },
            webhookToken: { type: "password" },
            bufferToken: { type: "password" },
            handlerSecret: { type: "password" }
        }
    });
};
