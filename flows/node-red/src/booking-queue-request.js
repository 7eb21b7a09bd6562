// GET queue-status on flowgate (the booking queue: queued createPatient /
// createAppt operations). No credentials: flowgate serves it as Node-RED did.
const base = String(env.get("FLOWGATE_URL") || "").replace(/\/+$/, "");
const basePath = String(env.get("FLOWGATE_BASE_PATH") || "/chord/ortho-prd").replace(/\/+$/, "");
msg.url = base + basePath + "/queue-status?page=1&pageSize=100";
msg.method = "GET";
msg.headers = { accept: "application/json" };
msg.requestTimeout = 5000;
delete msg.payload;
return msg;
