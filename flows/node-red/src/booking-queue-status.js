// booking queue — the seed's Status Node Display for the retry processor,
// now fed by flowgate's queue-status:
//   red ring    "Error: {message}"                 flowgate unreachable, failed operations, or
//                                                  no monitoring credentials (only the whole
//                                                  queue, scope "all", has the counts to show)
//   blue dot    "Processing {opId} (attempt {n})"  an operation is being sent to Cloud9
//   yellow ring "Rate limited - retry in {n}s"     operations wait for their next retry
//   grey ring   "Idle - P:{pending} C:{completed} F:{failed}"
// The message goes on with payload {fill, shape, text, counts} (debug node).
const q = msg.payload;
let counts = (q && typeof q === "object" && typeof q.total === "number")
    ? { pending: q.pending, processing: q.processing, completed: q.completed, failed: q.failed, total: q.total } : null;
const ops = (counts && Array.isArray(q.operations)) ? q.operations : [];
const idle = counts ? "Idle - P:" + counts.pending + " C:" + counts.completed + " F:" + counts.failed : "";
let s;
if (!counts) {
    const why = typeof msg.statusCode === "number" ? "HTTP " + msg.statusCode : String(msg.statusCode || "no answer");
    s = { fill: "red", shape: "ring", text: "Error: queue-status " + why };
} else if (q.scope && q.scope !== "all") {
    s = { fill: "red", shape: "ring", text: "Error: queue-status needs the monitoring credentials (FLOWGATE_MONITORING_USER)" };
    counts = null; // not the queue's: the caller's own operations (none named)
} else if (counts.failed > 0) {
    const last = ops.find((o) => o.status === "failed");
    s = { fill: "red", shape: "ring", text: "Error: " + counts.failed + " failed" + (last && last.lastError ? " - " + last.lastError : "") + " | " + idle };
} else if (counts.processing > 0) {
    const p = ops.find((o) => o.status === "processing") || {};
    s = { fill: "blue", shape: "dot", text: "Processing " + (p.id || "?") + " (attempt " + ((p.attempts || 0) + 1) + ")" };
} else {
    const now = Date.now();
    const waits = ops.filter((o) => o.status === "pending" && o.nextRetryAt)
        .map((o) => Date.parse(o.nextRetryAt) - now).filter((ms) => ms > 0);
    if (waits.length > 0) {
        s = { fill: "yellow", shape: "ring", text: "Rate limited - retry in " + Math.ceil(Math.min.apply(null, waits) / 1000) + "s" };
    } else {
        s = { fill: "grey", shape: "ring", text: idle };
    }
}
node.status(s);
msg.payload = Object.assign({ source: "queue-status", counts: counts }, s);
return msg;
