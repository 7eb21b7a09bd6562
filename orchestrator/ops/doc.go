// Package ops serves the Node-RED flow's operation endpoints
// (docs/reference/nodered-endpoints.md §1.6) on flowgate: redisGet / redisSet / redisDelete restricted to the
// key prefixes flowgate owns and never on flowgate's own state, its caches
// written or its secrets read (orchestrator/keyspace: 403 protected_key,
// whatever the prefixes), and the tiered slot cache's cache-health,
// cache/refresh, DELETE cache and cache/trigger, with the original's test
// routes /test/slot-cache/* and /test/redis-slot-cache/* as aliases of the
// same operations. Every route sits behind the Auth middleware the caller
// gives (the monitoring credentials); errors are the flowgate error
// envelope (contracts.Error through the app's error handler), and bad
// input changes nothing.
package ops
