// Signed GET /queue/stats (the VM task ledger): signature version 2,
// HMAC-SHA256(HMAC_SECRET, timestamp + "." + "GET /queue/stats" + "." + "")
// in hex (docs/tasks.md: Authentication). Setup: crypto.
const secret = String(env.get("HMAC_SECRET") || "");
const base = String(env.get("FLOWGATE_URL") || "").replace(/\/+$/, "");
const target = "/queue/stats";
const ts = String(Math.floor(Date.now() / 1000));
const sig = crypto.createHmac("sha256", secret).update(ts + ".GET " + target + ".").digest("hex");
msg.url = base + target;
msg.method = "GET";
msg.headers = { accept: "application/json", "x-timestamp": ts, "x-signature-version": "2", "x-signature": sig };
msg.requestTimeout = 5000;
delete msg.payload;
return msg;
