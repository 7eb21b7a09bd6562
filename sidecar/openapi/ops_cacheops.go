package openapi

import (
	"net/http"

	"github.com/flowgate/flowgate/contracts"
)

// opsCacheOps are the operations endpoints (orchestrator/ops) behind the
// monitoring credentials: flowgate's own Redis keys, the tiered slot cache,
// and the original's test routes as aliases at their own paths.
func opsCacheOps() []Op {
	const tag = "operations"
	errs := []Resp{{Status: s400, Desc: "bad input", Body: errBody},
		{Status: s401, Desc: "no monitoring credentials", Body: errBody}, {Status: s503, Desc: "Redis unavailable", Body: errBody}}
	keyErrs := append([]Resp{{Status: s403, Desc: "a key outside OPS_KEY_PREFIXES (forbidden), or of flowgate's own state, " +
		"a cache to write or a secret family to read (protected_key, docs/keyspace.md)", Body: errBody}}, errs...)
	op := func(method, path, summary string, req []any, query []string, ok Resp) Op {
		return Op{Method: method, Path: path, Tag: tag, Summary: summary, Auth: AuthMonitor, Request: req, Query: query,
			Responses: append([]Resp{ok}, errs...)}
	}
	keyOp := func(method, path, summary string, req []any, query []string, ok Resp) Op {
		o := op(method, path, summary, req, query, ok)
		o.Responses = append([]Resp{ok}, keyErrs...)
		return o
	}
	obj := []any{map[string]any{}}
	setReq, delReq := []any{contracts.RedisSetRequest{}}, []any{contracts.RedisDeleteRequest{}}
	refresh := Resp{Status: s200, Desc: "per-tier results", Body: []any{contracts.CacheRefreshResponse{}}}
	clear := Resp{Status: s200, Desc: "cleared", Body: []any{contracts.CacheClearResponse{}}}
	status := Resp{Status: s200, Desc: "cache entries", Body: []any{contracts.CacheStatusResponse{}}}
	return []Op{
		keyOp(http.MethodGet, BasePath+"/redisGet", "A key's JSON value (null when absent; not a secret family's)", nil, []string{"key"},
			Resp{Status: s200, Desc: "the stored JSON", Body: obj}),
		keyOp(http.MethodPost, BasePath+"/redisSet", "Set a key, never one of flowgate's own (ttl honoured)", setReq, nil,
			Resp{Status: s200, Desc: "set", Body: []any{contracts.RedisSetResponse{}}}),
		keyOp(http.MethodPost, BasePath+"/redisDelete", "Delete a key, never flowgate's state", delReq, []string{"key"},
			Resp{Status: s200, Desc: "deleted", Body: []any{contracts.RedisDeleteResponse{}}}),
		keyOp(http.MethodDelete, BasePath+"/redisDelete", "Delete a key, never flowgate's state", delReq, []string{"key"},
			Resp{Status: s200, Desc: "deleted", Body: []any{contracts.RedisDeleteResponse{}}}),
		{Method: http.MethodGet, Path: BasePath + "/cache-health", Tag: tag, Summary: "The slot cache tiers' health", Auth: AuthMonitor,
			Responses: []Resp{{Status: s200, Desc: "healthy or degraded", Body: []any{contracts.CacheHealth{}}},
				{Status: s401, Desc: "no monitoring credentials", Body: errBody},
				{Status: s503, Desc: "unhealthy (same shape)", Body: []any{contracts.CacheHealth{}}}}},
		op(http.MethodPost, BasePath+"/cache/refresh", "Refresh the tiers now", obj, []string{"tier"}, refresh),
		op(http.MethodDelete, BasePath+"/cache", "Clear the tiers", nil, []string{"tier"}, clear),
		op(http.MethodPost, BasePath+"/cache/trigger", "Refresh in the background", nil, nil,
			Resp{Status: s200, Desc: "triggered", Body: []any{contracts.CacheTriggerResponse{}}}),
		op(http.MethodPost, "/test/slot-cache/prefetch", "Alias (the original's test route): fill the cache", nil, nil,
			Resp{Status: s200, Desc: "prefetched", Body: []any{contracts.CachePrefetchResponse{}}}),
		op(http.MethodGet, "/test/slot-cache/status", "Alias: cache entries", nil, nil, status),
		op(http.MethodPost, "/test/slot-cache/query", "Alias: slots from the cache", []any{contracts.CacheQueryRequest{}}, nil,
			Resp{Status: s200, Desc: "slots", Body: []any{contracts.CacheQueryResponse{}}}),
		op(http.MethodDelete, "/test/slot-cache/clear", "Alias of DELETE cache", nil, nil, clear),
		op(http.MethodPost, "/test/redis-slot-cache/trigger", "Alias of cache/refresh", nil, nil, refresh),
		op(http.MethodGet, "/test/redis-slot-cache/status", "Alias: cache entries", nil, nil, status),
		op(http.MethodDelete, "/test/redis-slot-cache/clear", "Alias of DELETE cache", nil, nil, clear),
	}
}
