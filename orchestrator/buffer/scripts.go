package buffer

import "github.com/redis/go-redis/v9"

// creditLua is the credit hash's field format, shared by the scripts that
// touch it (admitScript, leaveScript, resyncScript): field = an instance's
// id (depthGauge.instance), value "<places>:<touched at, unix ms>", the
// time Redis's own (TIME), never a client clock. held reads an instance's
// places (0 without a field); hold writes them and refreshes the time, and
// deletes the field at 0.
const creditLua = `
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function held(h, f)
  local v = redis.call('HGET', h, f)
  return v and tonumber(string.match(v, '^(%d+):')) or 0
end
local function hold(h, f, n)
  if n > 0 then redis.call('HSET', h, f, n .. ':' .. now()) else redis.call('HDEL', h, f) end
end
`

// reserveScript reserves n places (a batch's messages without
// idempotency keys; seed ENQUEUE "check backpressure").
//
//	KEYS[1] depth counter; ARGV[1] n; ARGV[2] max queue size
//	returns {reserved, depth after} | {reserveFull, depth}
var reserveScript = redis.NewScript(`
local n = tonumber(ARGV[1])
local d = tonumber(redis.call('GET', KEYS[1]) or '0')
if d + n > tonumber(ARGV[2]) then return {1, d} end
return {0, redis.call('INCRBY', KEYS[1], n)}
`)

// reserveScript's reply codes.
const (
	reserved    int64 = 0 // {0, depth after}
	reserveFull int64 = 1 // {1, depth}: QUEUE_FULL
)

// admitScript's reply codes, per message and then the places reserved
// ahead.
const (
	admitted       int64 = 0 // {0, depth after}
	admitFull      int64 = 1 // {1, depth}: QUEUE_FULL
	admitClaimed   int64 = 2 // {2, claim}: the idem key names another message
	admitIDClaimed int64 = 3 // {3, claim}: the messageId is claimed by another message
	admitAhead     int64 = 4 // {4, places}: the last item, places reserved ahead
)

// admitScript admits single messages, all the enqueues that arrived
// while the previous call was in flight (admission.go): per message the
// idempotency claim, the messageId claim (a client-chosen messageId is
// unique across the four queues, not only per queue as Asynq's task id)
// and the place, in order (seed ENQUEUE "check idempotency", "check
// backpressure"). Claims are set with a TTL (claimTTL) so one whose
// message never finishes here (a task deleted elsewhere, a failed
// expireIdem) does not stay forever.
//
// After the messages it reserves up to ARGV[3] more places for this
// instance's next enqueues without a key (placeCredit, depth.go), only
// while the buffer stays at most half full with them, and adds them to
// this instance's field of the credit hash in the same step, so every
// instance's resync counts them (resyncScript).
//
//	KEYS[1] depth counter; KEYS[2] credit hash; KEYS[3..] per message its
//	idem key (when it has one), then its id key (when it has one), in
//	message order
//	ARGV[1] max queue size; ARGV[2] claim TTL ms; ARGV[3] places to
//	reserve ahead; ARGV[4] this instance's credit field; then five per
//	message: "1" when it has an idem key else "0", the same for an id key,
//	its claim value, the idem claim it takes over, the id claim it takes
//	over (a claim whose task is missing, resumed, or an unreadable one;
//	"" : the key must be free)
//	returns per message {admitted, depth after} | {admitFull, depth} |
//	        {admitClaimed, claim} the idem key is claimed by another message |
//	        {admitIDClaimed, claim} the messageId is claimed by another
//	        message; then {admitAhead, places reserved ahead}
var admitScript = redis.NewScript(creditLua + `
local max = tonumber(ARGV[1])
local d = tonumber(redis.call('GET', KEYS[1]) or '0')
local out, k, admitted = {}, 3, 0
for i = 5, #ARGV, 5 do
  local key, idk = nil, nil
  if ARGV[i] == '1' then key = KEYS[k]; k = k + 1 end
  if ARGV[i + 1] == '1' then idk = KEYS[k]; k = k + 1 end
  local v = key and redis.call('GET', key)
  local w = idk and redis.call('GET', idk)
  if v and v ~= ARGV[i + 3] then
    out[#out + 1] = {2, v}
  elseif w and w ~= ARGV[i + 4] then
    out[#out + 1] = {3, w}
  elseif d + 1 > max then
    out[#out + 1] = {1, d}
  else
    d = d + 1
    admitted = admitted + 1
    if key then redis.call('SET', key, ARGV[i + 2], 'PX', ARGV[2]) end
    if idk then redis.call('SET', idk, ARGV[i + 2], 'PX', ARGV[2]) end
    out[#out + 1] = {0, d}
  end
end
local ahead = tonumber(ARGV[3])
if ahead > 0 and d + ahead <= max / 2 then
  admitted = admitted + ahead
  hold(KEYS[2], ARGV[4], held(KEYS[2], ARGV[4]) + ahead)
else
  ahead = 0
end
if admitted > 0 then redis.call('INCRBY', KEYS[1], admitted) end
out[#out + 1] = {4, ahead}
return out
`)

// claimScript claims a client-chosen messageId alone, in the id's shard,
// for a message whose idempotency key falls in another shard
// (Buffer.admitSplit: the key claim and the place are admitted there
// next, and this claim dropped with unadmitScript when they are not).
//
//	KEYS[1] the id claim key
//	ARGV[1] the claim value; ARGV[2] the claim it takes over ("": the key
//	must be free); ARGV[3] claim TTL ms
//	returns {claimTaken, ""} | {claimHeld, claim}: another message's
var claimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[2] and v ~= ARGV[1] then return {3, v} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return {0, ''}
`)

// claimScript's reply codes.
const (
	claimTaken = 0              // {0, ""}: the id is claimed for the message
	claimHeld  = admitIDClaimed // {3, claim}: claimed by another message
)

// unadmitScript undoes an admission whose enqueue certainly failed.
//
//	KEYS[1] depth counter; KEYS[2..] the message's claim keys (idem, id;
//	none without), all of one shard
//	ARGV[1] n messages (0: claims only); ARGV[2] the claim value to drop
//	returns the depth after
var unadmitScript = redis.NewScript(`
for i = 2, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[2] then redis.call('DEL', KEYS[i]) end
end
local d = redis.call('DECRBY', KEYS[1], ARGV[1])
if d < 0 then redis.call('SET', KEYS[1], 0); d = 0 end
return d
`)

// leaveScript counts messages that left the queues (completed or dead)
// and settles this instance's place credit (depth.go, subtract): places
// taken from it since the last flush became messages, already in the
// counter, so only the field shrinks; idle credit given back leaves both.
// What is given back is bounded by what the field still holds (a field a
// resync dropped as stale is no longer in the counter either), and the
// shortfall is reported so the instance drops credit no one counts.
//
//	KEYS[1] depth counter; KEYS[2] credit hash
//	ARGV[1] n finished messages; ARGV[2] credit places taken; ARGV[3]
//	idle credit given back; ARGV[4] this instance's credit field; ARGV[5]
//	"1": give back all the field holds beyond the taken places (Stop)
//	returns {depth after (never below 0), places the field lacked}
var leaveScript = redis.NewScript(creditLua + `
local n, t, g = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local lack = 0
if t > 0 or g > 0 or ARGV[5] == '1' then
  local h = held(KEYS[2], ARGV[4])
  lack = math.max(t + g - h, 0)
  if ARGV[5] == '1' then g = h - t end
  g = math.max(math.min(g, h - t), 0)
  hold(KEYS[2], ARGV[4], h - t - g)
  n = n + g
end
local d = redis.call('DECRBY', KEYS[1], n)
if d < 0 then redis.call('SET', KEYS[1], 0); d = 0 end
return {d, lack}
`)

// resyncScript re-sets the depth counter to Asynq's figure plus the place
// credit every instance holds: the sum of the credit hash's fields, each
// touched within the staleness bound; an older field (a crashed instance's)
// is deleted, so its places do not stay counted. The calling instance's
// own field is first set to the credit it holds (0 deletes it), healing a
// drift (depthGauge.resync).
//
//	KEYS[1] depth counter; KEYS[2] credit hash
//	ARGV[1] Asynq's figure (the four queues' sizes); ARGV[2] staleness ms
//	ARGV[3] this instance's credit field; ARGV[4] the places it holds
//	returns the depth set
var resyncScript = redis.NewScript(creditLua + `
hold(KEYS[2], ARGV[3], tonumber(ARGV[4]))
local d, at = tonumber(ARGV[1]), now() - tonumber(ARGV[2])
local f = redis.call('HGETALL', KEYS[2])
for i = 1, #f, 2 do
  local n, ms = string.match(f[i + 1], '^(%d+):(%d+)$')
  if n and tonumber(ms) >= at then d = d + tonumber(n) else redis.call('HDEL', KEYS[2], f[i]) end
end
redis.call('SET', KEYS[1], d)
return d
`)

// expireIdemScript gives an idempotency claim its retention once the
// message finished, or deletes it (ttl 0), only while it still names the
// message (a later claimant is never touched).
//
//	KEYS[1] idem key; ARGV[1] "<messageId> " (the claim's start);
//	ARGV[2] TTL ms (0: delete)
//	returns 1 when changed, else 0
var expireIdemScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, #ARGV[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) == 0 then return redis.call('DEL', KEYS[1]) end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
`)

// dlqCountScript moves the dead-letter counter and decides the alert in
// the same step, so two instances never both see "first crossing" and a
// stale reading never re-arms it (seed checkAndAlert).
//
//	KEYS[1] DLQ counter; KEYS[2] alert flag
//	ARGV[1] delta, or the true count when ARGV[3] == "set"; ARGV[2] threshold
//	returns {dlqCrossed, count} on a crossing (alert now) | {dlqNoAlert, count}
var dlqCountScript = redis.NewScript(`
local n
if ARGV[3] == 'set' then
  n = tonumber(ARGV[1]); redis.call('SET', KEYS[1], n)
else
  n = redis.call('INCRBY', KEYS[1], ARGV[1])
end
if n < 0 then n = 0; redis.call('SET', KEYS[1], 0) end
if n >= tonumber(ARGV[2]) then
  if redis.call('SET', KEYS[2], n, 'NX') then return {1, n} end
  return {0, n}
end
redis.call('DEL', KEYS[2])
return {0, n}
`)

// dlqCountScript's reply codes.
const (
	dlqNoAlert int64 = 0 // {0, count}: below the threshold, or crossed before
	dlqCrossed int64 = 1 // {1, count}: crossed now: alert
)

// replayScript moves an archived (dead-lettered) task back to pending
// with a fresh retry budget: what Asynq's Inspector.RunTask does (ZREM
// archived, LPUSH pending, state pending), plus the task message replaced
// by the same message with retried = 0. RunTask keeps the retry count, so
// a replay ran one attempt and, with the type's breaker open, its
// deferral was archived again at once (Asynq archives a task whose
// retries are spent whatever the error). The message is replaced only if
// it is still the one the caller read and rewrote.
//
//	KEYS[1] asynq:{q}:t:<id>, KEYS[2] asynq:{q}:pending, KEYS[3] asynq:{q}:archived
//	ARGV[1] task id, ARGV[2] the msg field as read, ARGV[3] the msg to write
//	returns replayMoved | replayNoTask | replayNotArchived | replayChanged
var replayScript = redis.NewScript(`
local st = redis.call('HMGET', KEYS[1], 'state', 'msg')
if not st[1] then return 0 end
if st[1] ~= 'archived' then return 2 end
if st[2] ~= ARGV[2] then return 3 end
if redis.call('ZREM', KEYS[3], ARGV[1]) == 0 then return 2 end
redis.call('HSET', KEYS[1], 'msg', ARGV[3], 'state', 'pending')
redis.call('LPUSH', KEYS[2], ARGV[1])
return 1
`)

// replayScript's reply codes.
const (
	replayNoTask      int64 = 0
	replayMoved       int64 = 1
	replayNotArchived int64 = 2 // a concurrent replay moved it
	replayChanged     int64 = 3 // the message changed between read and write
)

// listScript reads the next ids of a pending or active list for List
// (list.go, listCursor): Asynq pushes on the left and takes from the
// right, so a walk goes right to left. It starts left of the first anchor
// still in the list (LPOS, scanning from the right, where anchors sit),
// or at the right end when none is (the first page, or anchors all taken
// by workers, with everything walked before them).
//
//	KEYS[1] asynq:{<queue>}:pending or :active
//	ARGV[1] n, the most ids to return; ARGV[2..] anchors, the most
//	        recently walked first
//	returns up to n ids, in walk order (oldest first); {} at the end
var listScript = redis.NewScript(`
local stop = redis.call('LLEN', KEYS[1]) - 1
for i = 2, #ARGV do
  local p = redis.call('LPOS', KEYS[1], ARGV[i], 'RANK', -1)
  if p then stop = p - 1; break end
end
if stop < 0 then return {} end
local start = stop - tonumber(ARGV[1]) + 1
if start < 0 then start = 0 end
local ids = redis.call('LRANGE', KEYS[1], start, stop)
local out = {}
for i = #ids, 1, -1 do out[#out + 1] = ids[i] end
return out
`)
