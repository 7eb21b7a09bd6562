// original failed — a node on this tab threw while answering a "local"
// request: hand the request back to the proxy (return link), which answers
// the fallback at once instead of letting the caller wait for the link
// call's timeout.
msg.flowgate = msg.flowgate || {};
msg.flowgate.fallback = true;
msg.flowgate.error = "the original node of " + msg.flowgate.endpoint + " failed: " + ((msg.error && msg.error.message) || "unknown error");
return msg;
