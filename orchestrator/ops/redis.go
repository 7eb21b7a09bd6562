package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/keyspace"
)

// maxKeyLen bounds a key (bytes).
const maxKeyLen = 512

// checkKey refuses a missing key, one that is too long or not UTF-8, a key
// of flowgate's own that op may not touch (403 protected_key, whatever
// the prefixes: see guard), and one outside the owned prefixes (403
// forbidden: flowgate does not hand out other programs' keys); a read may
// also reach the read-only prefixes.
func (h *Handlers) checkKey(op, key string) error {
	switch {
	case strings.TrimSpace(key) == "":
		return contracts.Errorf(contracts.CodeInvalid, "key is required")
	case len(key) > maxKeyLen || !utf8.ValidString(key):
		return contracts.Errorf(contracts.CodeInvalid, "key must be UTF-8 of at most %d bytes", maxKeyLen)
	}
	if err := h.guard(op, key); err != nil {
		return err
	}
	if h.owned(key) {
		return nil
	}
	if op == opGet {
		for _, p := range h.cfg.ReadPrefixes {
			if strings.HasPrefix(key, p) {
				return nil
			}
		}
		return contracts.Errorf(contracts.CodeForbidden, "key is outside the prefixes flowgate may read (%s)",
			strings.Join(append(slices.Clone(h.cfg.Prefixes), h.cfg.ReadPrefixes...), ", "))
	}
	return contracts.Errorf(contracts.CodeForbidden, "key is outside the prefixes flowgate owns (%s)", strings.Join(h.cfg.Prefixes, ", "))
}

// The operations, as guard names them.
const (
	opGet    = "redisGet"
	opSet    = "redisSet"
	opDelete = "redisDelete"
)

// guard refuses (403 protected_key, details family and class) what op may
// not do to key's family (orchestrator/keyspace): write any key of
// flowgate's but the operators' own (flowgate:ops:…), delete its state
// (the shard marker, the task ledger, the buffer, holds, locks, sessions,
// replay and idempotency guards, Asynq's queues, the availability
// schedule: every key whose loss changes behaviour; its caches may go),
// read the families whose values carry credentials or personal data. The
// prefixes never open them: the guard runs first. A refusal is logged
// with the family, never the key (it may carry a phone number).
func (h *Handlers) guard(op, key string) error {
	f := keyspace.Classify(key)
	var allowed bool
	var why string
	switch op {
	case opGet:
		allowed, why = f.Readable(), "it holds credentials or personal data"
	case opSet:
		allowed, why = f.Writable(), "flowgate writes its own keys only itself"
	default:
		allowed, why = f.Deletable(), "losing it changes how flowgate behaves"
	}
	if allowed {
		return nil
	}
	h.cfg.Logger.Warn("ops: refused a key of flowgate's own", "op", op, "family", f.Name, "class", f.Class.String())
	e := contracts.Errorf(contracts.CodeProtectedKey, "key belongs to flowgate's %s (%s of %s): %s refuses it, %s",
		f.Name, f.Class, f.Owner, op, why)
	e.Details = map[string]any{"field": "key", "family": f.Name, "class": f.Class.String()}
	return e
}

func unavailable(op string, err error) error {
	return contracts.Wrap(contracts.CodeUnavailable, op, err, "redis could not answer")
}

// owned reports whether key is under one of the prefixes flowgate owns.
func (h *Handlers) owned(key string) bool {
	for _, p := range h.cfg.Prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// redisGet is GET redisGet?key=: the stored JSON value, a string value
// that is not JSON as a JSON string, null when the key does not exist.
func (h *Handlers) redisGet(c *fiber.Ctx) error {
	key := c.Query("key")
	if err := h.checkKey(opGet, key); err != nil {
		return err
	}
	ctx := c.UserContext()
	if h.cfg.ReadKey != nil && !h.owned(key) {
		key = h.cfg.ReadKey(key)
		if err := h.guard(opGet, key); err != nil { // where the engine keeps it: the same family, checked again
			return err
		}
	}
	v, err := h.cfg.Redis.Get(ctx, key).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return c.JSON(nil)
	case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
		return contracts.Errorf(contracts.CodeConflict, "key does not hold a string value")
	case err != nil:
		return unavailable("ops.redisGet", err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	if json.Valid(v) {
		return c.Send(v)
	}
	return c.JSON(string(v))
}

// redisSet is POST redisSet {key, value, ttl}: value (any JSON but null)
// is stored as JSON; ttl, in seconds, sets the expiry (the original
// dropped it).
func (h *Handlers) redisSet(c *fiber.Ctx) error {
	var req contracts.RedisSetRequest
	if err := contracts.DecodeJSON(c.Body(), &req); err != nil {
		return err
	}
	if err := h.checkKey(opSet, req.Key); err != nil {
		return err
	}
	if v := strings.TrimSpace(string(req.Value)); v == "" || v == "null" {
		return contracts.Errorf(contracts.CodeInvalid, "value is required (any JSON value but null)")
	}
	var ttl time.Duration
	if req.TTL != nil {
		ttl = time.Duration(*req.TTL) * time.Second
		if *req.TTL < 0 || ttl > h.cfg.MaxTTL {
			return contracts.Errorf(contracts.CodeInvalid, "ttl must be 0..%d seconds", int64(h.cfg.MaxTTL.Seconds()))
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, req.Value); err != nil {
		return contracts.Errorf(contracts.CodeInvalid, "value is not valid JSON")
	}
	ctx := c.UserContext()
	if err := h.cfg.Redis.Set(ctx, req.Key, compact.String(), ttl).Err(); err != nil {
		return unavailable("ops.redisSet", err)
	}
	resp := contracts.RedisSetResponse{Success: true, Key: req.Key, Message: "stored"}
	if ttl > 0 {
		secs := int64(ttl.Seconds())
		resp.TTL, resp.Message = &secs, "stored with a TTL"
	}
	return c.JSON(resp)
}

// redisDelete is POST redisDelete {key} or DELETE redisDelete?key= (the
// original called it but never built it).
func (h *Handlers) redisDelete(c *fiber.Ctx) error {
	key := c.Query("key")
	if c.Method() == fiber.MethodPost || len(c.Body()) > 0 {
		var req contracts.RedisDeleteRequest
		if err := contracts.DecodeJSON(c.Body(), &req); err != nil {
			return err
		}
		key = req.Key
	}
	if err := h.checkKey(opDelete, key); err != nil {
		return err
	}
	ctx := c.UserContext()
	n, err := h.cfg.Redis.Del(ctx, key).Result()
	if err != nil {
		return unavailable("ops.redisDelete", err)
	}
	msg := "deleted"
	if n == 0 {
		msg = "no such key"
	}
	return c.JSON(contracts.RedisDeleteResponse{Success: true, Key: key, Deleted: n == 1, Message: msg})
}
