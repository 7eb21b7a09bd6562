// GET queue-status on flowgate (the booking queue: queued createPatient /
// createAppt operations). The whole queue (counts, every operation) is the
// monitoring credentials' only: FLOWGATE_MONITORING_USER and
// FLOWGATE_MONITORING_PASSWORD (flowgate's MONITORING_USER / _PASSWORD),
// sent as basic auth. Without them flowgate answers only the operations a
// caller names (none here), which the status node shows as an error.
const base = String(env.get("FLOWGATE_URL") || "").replace(/\/+$/, "");
const basePath = String(env.get("FLOWGATE_BASE_PATH") || "/chord/ortho-prd").replace(/\/+$/, "");
const user = String(env.get("FLOWGATE_MONITORING_USER") || "");
const pass = String(env.get("FLOWGATE_MONITORING_PASSWORD") || "");
msg.url = base + basePath + "/queue-status?page=1&pageSize=100";
msg.method = "GET";
msg.headers = { accept: "application/json" };
if (user) {
    msg.headers.authorization = "Basic " + Buffer.from(user + ":" + pass, "utf8").toString("base64");
}
msg.requestTimeout = 5000;
delete msg.payload;
return msg;
