// task queue — counts of flowgate's VM task ledger (GET /queue/stats) in
// the same display:
//   red ring    "Error: {message}"          stats unreachable or refused, or dead letters
//   yellow ring "Retry waiting - {n} tasks"  FAILed tasks wait for their requeue
//   grey ring   "Idle - P:{PENDING} C:{DONE} F:{ERROR}"
const q = msg.payload;
const ok = msg.statusCode === 200 && q && typeof q === "object" && q.by_status;
let s;
let counts = null;
if (!ok) {
    const why = q && q.error && q.error.message ? q.error.message
        : (typeof msg.statusCode === "number" ? "HTTP " + msg.statusCode : String(msg.statusCode || "no answer"));
    s = { fill: "red", shape: "ring", text: "Error: queue/stats " + why };
} else {
    const b = q.by_status;
    counts = { pending: b.PENDING || 0, processing: b.PROCESSING || 0, completed: b.DONE || 0, failed: b.ERROR || 0, dlq: q.dlq || 0, retry_waiting: q.retry_waiting || 0 };
    const idle = "Idle - P:" + counts.pending + " C:" + counts.completed + " F:" + counts.failed;
    if (counts.dlq > 0) {
        s = { fill: "red", shape: "ring", text: "Error: " + counts.dlq + " dead letters | " + idle };
    } else if (counts.retry_waiting > 0) {
        s = { fill: "yellow", shape: "ring", text: "Retry waiting - " + counts.retry_waiting + " tasks" };
    } else {
        s = { fill: "grey", shape: "ring", text: idle };
    }
}
node.status(s);
msg.payload = Object.assign({ source: "queue/stats", counts: counts }, s);
return msg;
