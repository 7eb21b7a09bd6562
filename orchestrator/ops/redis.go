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
)

// maxKeyLen bounds a key (bytes).
const maxKeyLen = 512

// checkKey refuses a missing key, one that is too long or not UTF-8, and
// one outside the owned prefixes (403 forbidden: flowgate does not hand
// out other programs' keys); a read may also reach the read-only prefixes.
func (h *Handlers) checkKey(key string, read bool) error {
	switch {
	case strings.TrimSpace(key) == "":
		return contracts.Errorf(contracts.CodeInvalid, "key is required")
	case len(key) > maxKeyLen || !utf8.ValidString(key):
		return contracts.Errorf(contracts.CodeInvalid, "key must be UTF-8 of at most %d bytes", maxKeyLen)
	}
	if h.owned(key) {
		return nil
	}
	if read {
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
	if err := h.checkKey(key, true); err != nil {
		return err
	}
	ctx := c.UserContext()
	if h.cfg.ReadKey != nil && !h.owned(key) {
		key = h.cfg.ReadKey(key)
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
	if err := h.checkKey(req.Key, false); err != nil {
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
	if err := h.checkKey(key, false); err != nil {
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
