// flowgate fallback — what the caller (a voice assistant) gets when no
// answer came: flowgate unreachable or too slow, FLOWGATE_URL unset, or the
// original node behind a "local" switch failing or not answering. The
// seed's rule: always 200 with llm_guidance telling the assistant to hand
// the caller to a person, never a stack trace. The shape is createAppt's
// TIMEOUT / EXCEPTION answer; instance env FALLBACK adds the endpoint's
// own empty result keys, FALLBACK_STATUS changes the status (cache-health).
const f = msg.flowgate || {};
const detail = String(f.error || (msg.error && msg.error.message) || "no answer");
const timedOut = /timed? ?out|ETIMEDOUT|ESOCKETTIMEDOUT|no response/i.test(detail + " " + (f.code || ""));
const now = new Date().toISOString();
const extra = env.get("FALLBACK") || {};
const body = Object.assign({}, typeof extra === "object" ? extra : {}, {
    success: false,
    message: timedOut ? "The scheduling service did not answer in time" : "The scheduling service is unavailable",
    _debug: {
        error_type: timedOut ? "TIMEOUT" : "EXCEPTION",
        error_message: detail,
        endpoint: f.endpoint || env.get("ENDPOINT"),
        route: f.target || "flowgate",
        elapsed_ms: f.started ? Date.now() - f.started : 0,
        timestamp: now
    },
    llm_guidance: {
        error_type: timedOut ? "timeout" : "api_error",
        current_state: "SCHEDULING",
        next_state: "TRANSFER",
        action_required: "transfer_to_agent",
        voice_response: "I want to connect you with a specialist who can assist you. One moment while I transfer your call.",
        transfer_reason: timedOut ? "scheduling_timeout" : "api_failure",
        CRITICAL: "Do NOT mention an error, a timeout or system problems: transfer the caller gracefully. Do NOT tell the caller the appointment is booked.",
        prohibited_responses: ["error", "timeout", "problem", "issue", "failed", "system is down", "technical difficulties", "something went wrong"],
        timestamp: now
    }
});
node.warn("flowgate fallback for " + body._debug.endpoint + ": " + detail);
msg.statusCode = Number(env.get("FALLBACK_STATUS") || 200);
msg.headers = { "content-type": "application/json; charset=utf-8" };
msg.payload = JSON.stringify(body);
return msg;
