-- start_cooldown: sets a cooldown and its index by appointment id
-- (StartCooldown), as confirm.lua does.
--
--   KEYS[1] cooldown (client_limit)  KEYS[2] cooldown index
--   ARGV[1] cooldown value JSON  ARGV[2] cooldown ms
--
-- Returns 1.
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], KEYS[1], 'PX', ARGV[2])
return 1
