// original <endpoint> — the rollback target of the switch "local" (a link
// in named "original:<endpoint>" before it, a return link after it).
// Replace this node with your original function node for the endpoint, or
// paste the original function's code here. Until then the proxy answers the
// fallback shape for this endpoint, so a caller still gets guidance.
msg.flowgate = msg.flowgate || {};
msg.flowgate.fallback = true;
msg.flowgate.error = "the original node of " + msg.flowgate.endpoint + " is not wired in (flows/README.md: Rolling back one endpoint)";
return msg;
