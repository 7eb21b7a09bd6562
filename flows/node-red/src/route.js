// flowgate route — the one routing node of every proxied endpoint.
// Subflow instance env: ENDPOINT (the switch key), ENDPOINT_PATH (relative to
// FLOWGATE_BASE_PATH, or absolute when it starts with "/"), CALLER_AUTH_ONLY
// ("true": never FLOWGATE_TOKEN, only the caller's Authorization).
// Target: global context flowgate_routes[ENDPOINT] (set through the admin
// route, no redeploy), else env FLOWGATE_ROUTE_DEFAULT, else "flowgate".
// Output 1: the request for flowgate (→ http request). Output 2: "local"
// and "shadow", the operator's original node (→ link call to the link in
// named "original:" + ENDPOINT); with "shadow" the request as flowgate
// would get it rides along in msg.flowgate.mirror, and the shadow node
// mirrors it with the original's answer once the caller has it. Output 3:
// nothing to send to (→ fallback).
// The http in nodes skip body parsing: msg.payload is the raw body (a
// Buffer), sent to flowgate byte for byte; the original node gets it parsed
// as its own http in would have (JSON, text).
const endpoint = env.get("ENDPOINT");
const inHeaders = (msg.req && msg.req.headers) || {};
const routes = global.get("flowgate_routes") || {};
const target = routes[endpoint] || env.get("FLOWGATE_ROUTE_DEFAULT") || "flowgate";
msg.flowgate = { endpoint: endpoint, target: target, started: Date.now() };
const rel = String(env.get("ENDPOINT_PATH"));
const basePath = String(env.get("FLOWGATE_BASE_PATH") || "/chord/ortho-prd").replace(/\/+$/, "");
const path = rel.startsWith("/") ? rel : basePath + "/" + rel;
const original = (msg.req && msg.req.originalUrl) || "";
const q = original.indexOf("?");
const query = q >= 0 ? original.slice(q) : "";
const method = ((msg.req && msg.req.method) || "GET").toUpperCase();
// Headers that matter to flowgate; hop-by-hop ones and Node-RED's own stay out.
const pass = ["content-type", "accept", "authorization", "x-request-id", "user-agent", "traceparent"];
const headers = {};
for (const h of pass) {
    if (inHeaders[h] !== undefined) {
        headers[h] = inHeaders[h];
    }
}
if (target === "shadow") {
    // The caller's own Authorization goes with the mirror (flowgate's
    // queue-status shows what it names), never FLOWGATE_TOKEN.
    const raw = Buffer.isBuffer(msg.payload) ? msg.payload : Buffer.from(msg.payload === undefined ? "" : String(msg.payload));
    msg.flowgate.mirror = { path: path, query: query, method: method, headers: headers,
        body: (method === "GET" || method === "HEAD") ? "" : raw.toString("base64") };
}
if (target === "local" || target === "shadow") {
    if (Buffer.isBuffer(msg.payload)) {
        const ct = String(inHeaders["content-type"] || "");
        const text = msg.payload.toString("utf8");
        if (msg.payload.length === 0) {
            msg.payload = {};
        } else if (/json/i.test(ct)) {
            try {
                msg.payload = JSON.parse(text);
            } catch (e) {
                msg.flowgate.error = "malformed JSON body: " + e.message;
                return [null, null, msg];
            }
        } else if (/^text\//i.test(ct)) {
            msg.payload = text;
        }
    }
    msg.target = "original:" + endpoint;
    node.status(target === "shadow" ? { fill: "blue", shape: "ring", text: "shadow" } : { fill: "yellow", shape: "ring", text: "local" });
    return [null, msg, null];
}
node.status({ fill: "green", shape: "dot", text: "flowgate" });

const base = String(env.get("FLOWGATE_URL") || "").replace(/\/+$/, "");
if (!base) {
    msg.flowgate.error = "FLOWGATE_URL is not set";
    return [null, null, msg];
}
msg.url = base + path + query;
msg.method = method;
// Operations endpoints (CALLER_AUTH_ONLY) get only the caller's own
// Authorization: Node-RED's http in is unauthenticated, so injecting the
// token there would hand ops access to anyone who reaches Node-RED.
const token = env.get("CALLER_AUTH_ONLY") === "true" ? "" : env.get("FLOWGATE_TOKEN");
if (token && !headers.authorization) {
    headers.authorization = token.indexOf(" ") > 0 ? token : "Bearer " + token;
}
const fwd = inHeaders["x-forwarded-for"];
const ip = msg.req && msg.req.ip;
if (ip) {
    headers["x-forwarded-for"] = fwd ? fwd + ", " + ip : ip;
}
headers["x-flowgate-via"] = "node-red";

// The body as it came (a GET has none). Were body parsing on, a parsed
// object is sent as JSON.
let body = msg.payload;
if (msg.method === "GET" || msg.method === "HEAD" || (Buffer.isBuffer(body) && body.length === 0)) {
    body = undefined;
} else if (body !== undefined && body !== null && !Buffer.isBuffer(body) && typeof body !== "string") {
    body = JSON.stringify(body);
    headers["content-type"] = "application/json";
}
msg.payload = body;
msg.headers = headers;
const timeout = Number(env.get("FLOWGATE_TIMEOUT_MS") || 60000);
msg.requestTimeout = timeout > 0 ? timeout : 60000;
delete msg.statusCode;
return [msg, null, null];
