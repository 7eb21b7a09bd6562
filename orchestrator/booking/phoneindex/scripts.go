package phoneindex

import "github.com/redis/go-redis/v9"

// releaseLock deletes the refresh lock only if this refresh still holds it
// (compare-and-delete): a refresh that outlived its lock must not delete
// the next holder's.
//
//	KEYS[1] lock key
//	ARGV[1] this refresh's token
//
// Returns 1 when deleted, 0 otherwise.
var releaseLock = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)
