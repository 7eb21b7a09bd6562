#!/usr/bin/env node
// import.js — put the flowgate Node-RED kit into a flows file without the
// editor: node import.js [--if-absent] <flows.json> [kit files…]
// Kit files default to flowgate-proxy.json and flowgate-queue-dashboard.json
// next to this script. Nodes of the target file that the kit does not
// define are kept; the kit's nodes (matched by id) are replaced by the kit's
// current version. --if-absent leaves a target that already holds the kit
// untouched (docker-compose.yml runs it at every start, so edits made in
// the editor survive restarts). Start Node-RED afterwards (or restart it).
"use strict";
const fs = require("fs");
const path = require("path");

const args = process.argv.slice(2);
const ifAbsent = args[0] === "--if-absent";
if (ifAbsent) {
    args.shift();
}
const target = args.shift();
if (!target) {
    process.stderr.write("usage: node import.js [--if-absent] <flows.json> [kit files…]\n");
    process.exit(2);
}
const kitFiles = args.length ? args : ["flowgate-proxy.json", "flowgate-queue-dashboard.json"].map((f) => path.join(__dirname, f));
const kit = [];
for (const f of kitFiles) {
    const nodes = JSON.parse(fs.readFileSync(f, "utf8"));
    if (!Array.isArray(nodes)) {
        throw new Error(f + ": not a Node-RED flow export (want a JSON array of nodes)");
    }
    kit.push(...nodes);
}
const kitIDs = new Set(kit.map((n) => n.id));
let existing = [];
if (fs.existsSync(target)) {
    const text = fs.readFileSync(target, "utf8").trim();
    existing = text ? JSON.parse(text) : [];
    if (!Array.isArray(existing)) {
        existing = existing.flows || [];
    }
}
if (ifAbsent && existing.some((n) => kitIDs.has(n.id))) {
    process.stdout.write("import.js: " + target + " already holds the flowgate kit; left as it is\n");
    process.exit(0);
}
const kept = existing.filter((n) => !kitIDs.has(n.id));
const tmp = target + ".tmp-" + process.pid;
fs.writeFileSync(tmp, JSON.stringify(kept.concat(kit), null, 2));
fs.renameSync(tmp, target);
process.stdout.write("import.js: " + kit.length + " kit nodes written to " + target + " (" + kept.length + " other nodes kept)\n");
