-- drop (locator.go): deletes a locator that is exactly ARGV[1], or, with
-- ARGV[2], one that points to home ARGV[2] and was written before ARGV[3]
-- ms (the purge of the task it located: a create of the same id since then
-- wrote a newer one, which stays).
--
-- KEYS[1] locator key
-- ARGV[1] exact value (empty = any), ARGV[2] home shard index (empty =
-- none), ARGV[3] cutoff ms
--
-- Returns 1 when deleted, else 0.
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local h, at = string.match(v, '^(%d+):(%d+)$')
if v == ARGV[1] or (ARGV[2] ~= '' and h == ARGV[2] and tonumber(at) < tonumber(ARGV[3])) then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
