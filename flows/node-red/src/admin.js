// flowgate admin — the per-endpoint switch, changed without a redeploy.
//   GET  /flowgate-admin/routes                   → {default, endpoints: {name: target}, overrides}
//   PUT  /flowgate-admin/routes {"endpoint":"createAppt","target":"local"}   (or "flowgate", "shadow")
//   PUT  /flowgate-admin/routes {"endpoint":"createAppt","target":null}      (back to the default)
// An endpoint of a group (tab env FLOWGATE_GROUPS: endpoints that share
// state — createPatient's session and bookingAuthToken, getApptSlots'
// bookingTokens, createAppt, queue-status) switches with its whole group:
// half a booking on each side would refuse the other half's tokens. The
// answer names the group and what was switched. "shadow" (the original
// answers, flowgate gets a mirror to compare) is refused for the endpoints
// of FLOWGATE_NO_SHADOW (the operation endpoints act on Redis themselves).
// Both need "Authorization: Bearer $FLOWGATE_ADMIN_TOKEN"; with the token
// unset the route is off (403). The switch lives in global context key
// flowgate_routes (persist it with a localfilesystem context store).
// Setup: crypto (constant-time token check). Tab env FLOWGATE_ENDPOINTS: the
// endpoint names (generated from endpoints.json).
const reply = (status, body) => {
    msg.statusCode = status;
    msg.headers = { "content-type": "application/json; charset=utf-8" };
    msg.payload = JSON.stringify(body);
    return msg;
};
const want = String(env.get("FLOWGATE_ADMIN_TOKEN") || "");
if (want.length < 16) {
    return reply(403, { error: "admin_disabled", message: "set FLOWGATE_ADMIN_TOKEN (at least 16 characters) to use this route" });
}
const auth = String((msg.req.headers && msg.req.headers.authorization) || "");
const got = auth.startsWith("Bearer ") ? auth.slice(7) : "";
const digest = (s) => crypto.createHash("sha256").update(s).digest();
if (!crypto.timingSafeEqual(digest(got), digest(want))) {
    return reply(401, { error: "unauthorized", message: "Authorization: Bearer <FLOWGATE_ADMIN_TOKEN> required" });
}
const names = env.get("FLOWGATE_ENDPOINTS") || [];
const groups = env.get("FLOWGATE_GROUPS") || {};
const noShadow = env.get("FLOWGATE_NO_SHADOW") || [];
const def = env.get("FLOWGATE_ROUTE_DEFAULT") || "flowgate";
const routes = Object.assign({}, global.get("flowgate_routes") || {});
const view = () => {
    const endpoints = {};
    for (const n of names) {
        endpoints[n] = routes[n] || def;
    }
    return { default: def, endpoints: endpoints, overrides: routes, groups: groups };
};
if (msg.req.method === "GET") {
    return reply(200, view());
}
const p = (msg.payload && typeof msg.payload === "object") ? msg.payload : {};
if (names.indexOf(p.endpoint) < 0) {
    return reply(400, { error: "unknown_endpoint", message: "endpoint must be one of the proxied endpoints", endpoints: names });
}
if (p.target !== null && p.target !== "flowgate" && p.target !== "local" && p.target !== "shadow") {
    return reply(400, { error: "bad_target", message: "target must be \"flowgate\", \"local\", \"shadow\" or null" });
}
if (p.target === "shadow" && noShadow.indexOf(p.endpoint) >= 0) {
    return reply(400, { error: "not_shadowable", message: "the operation endpoints act on Redis themselves and are never shadowed" });
}
let group = null;
let members = [p.endpoint];
for (const g of Object.keys(groups)) {
    if (groups[g].indexOf(p.endpoint) >= 0) {
        group = g;
        members = groups[g].slice();
    }
}
for (const n of members) {
    if (p.target === null) {
        delete routes[n];
    } else {
        routes[n] = p.target;
    }
}
global.set("flowgate_routes", routes);
node.warn("flowgate route " + members.join(", ") + " → " + (p.target || def + " (default)") + (group ? " (group " + group + ")" : ""));
return reply(200, Object.assign(view(), { group: group, switched: members }));
