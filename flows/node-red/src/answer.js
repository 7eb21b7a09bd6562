// flowgate answer — flowgate's status, content type and body go back
// unchanged (the http request node returns the body as a Buffer). A request
// that never got an HTTP answer (connection refused, timeout: the http
// request node then sets statusCode to the error code) goes to output 2,
// the fallback. The content type is set on the raw response: Express'
// res.set (used by the http response node) would append "; charset=utf-8".
const code = msg.statusCode;
if (typeof code === "number" && code >= 100) {
    const ct = msg.headers && msg.headers["content-type"];
    const keep = ["retry-after", "x-request-id", "www-authenticate", "cache-control", "location"];
    const headers = {};
    for (const h of keep) {
        if (msg.headers && msg.headers[h] !== undefined) {
            headers[h] = msg.headers[h];
        }
    }
    msg.headers = headers;
    if (msg.res && msg.res._res && !msg.res._res.headersSent) {
        msg.res._res.setHeader("Content-Type", ct || "application/octet-stream");
    }
    node.status({ fill: "green", shape: "dot", text: String(code) });
    return [msg, null];
}
msg.flowgate = msg.flowgate || {};
msg.flowgate.error = String(msg.payload || code || "no answer");
msg.flowgate.code = String(code || "");
node.status({ fill: "red", shape: "ring", text: msg.flowgate.code || "error" });
return [null, msg];
