// flowgate shadow — behind the switch "shadow", after the original node
// answered: mirror the request (as flowgate would have got it, body byte for
// byte) and the original's answer to flowgate's POST /api/shadow/mirror,
// which answers it dry and compares. Fire and forget: the caller's answer
// is sent first (the mirror waits for its "finish") and nothing here waits
// for flowgate. At most FLOWGATE_SHADOW_MAX_INFLIGHT (16) mirrors are in
// flight across every endpoint; one more is dropped and counted, and the
// count goes to flowgate with the endpoint's next mirror. Basic auth: the
// monitoring credentials (FLOWGATE_MONITORING_USER / _PASSWORD), as the
// dashboard's own poll. Setup: http, https.
const m = msg.flowgate && msg.flowgate.mirror;
const base = String(env.get("FLOWGATE_URL") || "").replace(/\/+$/, "");
if (!m || !base) {
    return null;
}
const endpoint = msg.flowgate.endpoint;
const ms = Date.now() - msg.flowgate.started;
const st = global.get("flowgate_shadow") || { inflight: 0, dropped: {}, sent: 0 };
const max = Number(env.get("FLOWGATE_SHADOW_MAX_INFLIGHT") || 16);
if (st.inflight >= max) {
    st.dropped[endpoint] = (st.dropped[endpoint] || 0) + 1;
    global.set("flowgate_shadow", st);
    node.status({ fill: "yellow", shape: "ring", text: "dropped " + st.dropped[endpoint] });
    return null;
}
let body = msg.payload;
if (body === undefined || body === null) {
    body = Buffer.alloc(0);
} else if (!Buffer.isBuffer(body)) {
    body = Buffer.from(typeof body === "object" ? JSON.stringify(body) : String(body));
}
const dropped = st.dropped[endpoint] || 0;
st.dropped[endpoint] = 0;
st.inflight++;
global.set("flowgate_shadow", st);
const envelope = JSON.stringify({ endpoint: endpoint, method: m.method, path: m.path, query: m.query, headers: m.headers,
    body: m.body, original: { status: Number(msg.statusCode) || 200, body: body.toString("base64"), ms: ms }, dropped: dropped });
const done = () => {
    const s = global.get("flowgate_shadow");
    s.inflight = Math.max(0, s.inflight - 1);
    global.set("flowgate_shadow", s);
};
const send = () => {
    let finished = false;
    const end = () => {
        if (!finished) {
            finished = true;
            done();
        }
    };
    try {
        const url = new URL(base + "/api/shadow/mirror");
        const lib = url.protocol === "https:" ? https : http;
        const headers = { "content-type": "application/json", "content-length": Buffer.byteLength(envelope), "x-flowgate-shadow": "1" };
        const user = env.get("FLOWGATE_MONITORING_USER");
        if (user) {
            headers.authorization = "Basic " + Buffer.from(user + ":" + (env.get("FLOWGATE_MONITORING_PASSWORD") || "")).toString("base64");
        }
        const req = lib.request(url, { method: "POST", headers: headers, timeout: Number(env.get("FLOWGATE_SHADOW_TIMEOUT_MS") || 30000) }, (res) => {
            node.status({ fill: res.statusCode === 200 ? "blue" : "red", shape: "ring", text: "mirror " + res.statusCode });
            res.resume();
            res.on("end", end);
            res.on("error", end);
        });
        req.on("timeout", () => req.destroy(new Error("timeout")));
        req.on("error", (e) => {
            node.status({ fill: "red", shape: "ring", text: "mirror: " + e.code });
            end();
        });
        req.on("close", end);
        req.end(envelope);
    } catch (e) {
        end();
    }
};
const res = msg.res && msg.res._res;
if (res && !res.writableFinished) {
    res.once("finish", send);
    res.once("close", () => { if (!res.writableFinished) { send(); } });
} else {
    setImmediate(send);
}
return null;
