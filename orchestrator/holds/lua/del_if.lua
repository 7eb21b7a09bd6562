-- del_if: deletes a key while it holds an expected value: a cooldown index
-- in another shard than its cooldown (split.go).
--
--   KEYS[1] the key  ARGV[1] the expected value
--
-- Returns 1 deleted, 0 not that value (nothing changed).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
