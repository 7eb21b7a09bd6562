package tasks

import "github.com/redis/go-redis/v9"

// The scripts of the locator (locator.go): the key loc:<id> in the shard of
// a client-given queue_id whose task lives in another shard. Its value is
// "<home shard>:<written ms>". They do not use the prelude.

// claimLocatorScript makes the locator of id point to the task's home
// shard, before the create (or import) script writes the task there.
//
// KEYS[1] locator key <base>loc:<id>, in the shard of the id; KEYS[2] the
// id's task key in that shard
// ARGV[1] that shard's base, ARGV[2] id, ARGV[3] home shard index, ARGV[4]
// now ms, ARGV[5] the value it may replace (empty = none: only a missing
// locator, or one of the same home)
//
// Returns {'here', status} when the id names a task of this shard (whose
// home is this shard, so not ARGV[3]: a reused queue_id); {'other', value}
// when the locator points to another home and is not ARGV[5] (nothing
// changed); {'ok'} when it now points to ARGV[3], written at ARGV[4] (a
// locator of the same home is refreshed: its time says a create is under
// way).
var claimLocatorScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[2], 'status')
if st then return {'here', st} end
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[5] and string.match(v, '^(%d+):') ~= ARGV[3] then return {'other', v} end
redis.call('SET', KEYS[1], ARGV[3] .. ':' .. ARGV[4])
return {'ok'}
`)

// dropLocatorScript deletes a locator that is exactly ARGV[1], or, with
// ARGV[2], one that points to home ARGV[2] and was written before ARGV[3]
// ms (the purge of the task it located: a create of the same id since then
// wrote a newer one, which stays).
//
// KEYS[1] locator key
// ARGV[1] exact value (empty = any), ARGV[2] home shard index (empty =
// none),
// ARGV[3] cutoff ms
//
// Returns 1 when deleted, else 0.
var dropLocatorScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local h, at = string.match(v, '^(%d+):(%d+)$')
if v == ARGV[1] or (ARGV[2] ~= '' and h == ARGV[2] and tonumber(at) < tonumber(ARGV[3])) then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)
