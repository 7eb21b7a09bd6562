#!/usr/bin/env bash
# worker.sh — a minimal flowgate VM worker (the "Phase 3" side of the queue).
#
#   FLOWGATE_URL=http://flowgate:8080 HMAC_SECRET=... WORKER_ID=vm-1 \
#   WORK_CMD='./do-the-work' flows/worker/worker.sh
#
# Loop: claim one task (POST /queue/claim, long poll) → run WORK_CMD while
# sending heartbeats (POST /queue/{id}/heartbeat) → ACK (POST /ack) with the
# command's output as experityActions, or FAIL (POST /fail) with its exit
# status and the tail of its stderr. Every request is signed the way flowgate
# verifies it: X-Timestamp + X-Signature = hex HMAC-SHA256(HMAC_SECRET,
# timestamp "." raw body), see webhooks/signature.
#
# Environment
#   FLOWGATE_URL        base URL of flowgate (required), e.g. http://127.0.0.1:8080
#   HMAC_SECRET         the shared signing secret (WEBHOOK_AUTH=hmac, the default)
#   WEBHOOK_TOKEN       bearer token (WEBHOOK_AUTH=token). With both set, both are
#                       sent, so flowgate can flip from token to hmac without
#                       touching the workers. One of the two is required.
#   WORKER_ID           this worker's id (default: hostname-pid)
#   WORK_CMD            the work, run with `bash -c` (required). stdin: the task
#                       as JSON; env TASK_QUEUE_ID, TASK_ENCOUNTER_ID,
#                       TASK_ATTEMPTS. Exit 0 and print one JSON value (or
#                       nothing, sent as {}) → ACK with it as experityActions.
#                       Exit non-zero, or print something that is not JSON → FAIL.
#                       An ACK flowgate refuses for good (a 4xx other than 404
#                       and 409, e.g. 413 too_large: output over flowgate's
#                       HTTP_BODY_LIMIT, 1 MiB by default) → FAIL "ACK refused:
#                       …". The job runs in a process group of its own, and
#                       the group is the job: when it is stopped (JOB_TIMEOUT,
#                       heartbeat refused, worker exiting) or has exited, each
#                       process left in the group gets TERM, then KILL after
#                       KILL_GRACE. A process that leaves the group (setsid,
#                       job control of its own) is out of reach.
#   MAX_TASKS           stop after this many tasks (default 0 = never)
#   WAIT_MS             long-poll wait of a claim, 0..20000 (default 20000)
#   IDLE_PAUSE          seconds to pause after a claim that found nothing when
#                       WAIT_MS is under 1000, i.e. flowgate did not hold the
#                       claim open (default 1; 0..60)
#   HEARTBEAT_INTERVAL  seconds between heartbeats while working (default 30;
#                       flowgate recovers a task silent for HEARTBEAT_STALE_AFTER,
#                       2 min by default)
#   JOB_TIMEOUT         seconds WORK_CMD may run before it is killed and the task
#                       FAILed with "timed out" (default 10800 = 3 h; 0 = none).
#                       Keep it under flowgate's TASK_MAX_PROCESSING (4 h by
#                       default), past which flowgate refuses heartbeats and
#                       takes the task back anyway
#   KILL_GRACE          seconds between the TERM and the KILL that stop a job's
#                       process group (default 5; 0..300)
#   ACK_PATH, FAIL_PATH webhook paths (default /ack and /fail; /webhook/ack and
#                       /webhook/fail work too)
#   SIGNATURE_VERSION   signature of ACK/FAIL: 1 (default, the seed's scheme) or
#                       2 (method and target signed too). Claim and heartbeat
#                       are always signed with version 2, which flowgate
#                       requires there; it needs the path flowgate sees to be
#                       the one in FLOWGATE_URL, i.e. no path-rewriting proxy
#   JSON_TOOL           jq or python3 (default: jq when installed, else python3)
#
# Needs bash ≥ 4, curl, openssl (python3 signs when openssl is missing) and jq
# or python3. SIGTERM/SIGINT: the current task is finished and reported, then
# the worker exits 0. SIGHUP: the running job is stopped (its task is left to
# flowgate's heartbeat monitor) and the worker exits 129; whenever the worker
# exits, a job still running is stopped first. SIGKILL cannot be caught: the
# job then runs on, and flowgate takes its task back once heartbeats stop.
# Exit 1: flowgate refused our credentials (401) or our requests (400); exit 2:
# bad configuration.
#
# With FLOWGATE_WORKER_SOURCE_ONLY=1, sourcing this file only defines the
# functions (sign, sign_v2, json_get, …) and changes nothing else; the tests
# use that to check the signatures against flowgate's Go code.

# ---- signing -----------------------------------------------------------------

# hmac_hex: hex HMAC-SHA256 of stdin with HMAC_SECRET as the key. openssl puts
# the key on its command line for the instant it runs; python3 (the fallback)
# reads it from the environment.
hmac_hex() {
	if command -v openssl >/dev/null 2>&1; then
		openssl dgst -sha256 -hmac "$HMAC_SECRET" | awk '{print $NF}'
	else
		HMAC_SECRET="$HMAC_SECRET" python3 -c '
import hashlib, hmac, os, sys
print(hmac.new(os.environb[b"HMAC_SECRET"], sys.stdin.buffer.read(), hashlib.sha256).hexdigest())'
	fi
}

# sign TIMESTAMP BODY: the version-1 X-Signature, hex HMAC-SHA256(secret,
# timestamp + "." + body). BODY must be exactly the bytes that are sent.
sign() {
	printf '%s.%s' "$1" "$2" | hmac_hex
}

# sign_v2 TIMESTAMP METHOD TARGET BODY: the version-2 X-Signature, hex
# HMAC-SHA256(secret, timestamp + "." + METHOD + " " + target + "." + body),
# target being the path with its query as sent (/queue/claim).
sign_v2() {
	printf '%s.%s %s.%s' "$1" "$2" "$3" "$4" | hmac_hex
}

# ---- JSON --------------------------------------------------------------------

json_tool() {
	if [[ -n "${JSON_TOOL:-}" ]]; then
		printf '%s' "$JSON_TOOL"
	elif command -v jq >/dev/null 2>&1; then
		printf jq
	else
		printf python3
	fi
}

# json_get KEY... : reads JSON on stdin and prints the value at the path
# (array indexes as numbers): strings raw, anything else as compact JSON,
# nothing when absent or null.
json_get() {
	if [[ "$(json_tool)" == jq ]]; then
		jq -r 'getpath($ARGS.positional | map(tonumber? // .))
			| if type == "string" then . elif . == null then empty else tojson end' --args "$@"
	else
		python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1:]:
    if isinstance(v, list):
        i = int(k)
        v = v[i] if -len(v) <= i < len(v) else None
    elif isinstance(v, dict):
        v = v.get(k)
    else:
        v = None
    if v is None:
        break
if isinstance(v, str):
    sys.stdout.write(v)
elif v is not None:
    sys.stdout.write(json.dumps(v, separators=(",", ":"), ensure_ascii=False))' "$@"
	fi
}

# json_str STRING: STRING as a JSON string literal. Bytes that are not UTF-8
# (a multi-byte character cut by head -c or tail -c) become U+FFFD, with jq
# and with python3 alike.
json_str() {
	if [[ "$(json_tool)" == jq ]]; then
		printf '%s' "$(jq -cn --arg s "$1" '$s')"
	else
		python3 -c '
import json, os, sys
sys.stdout.write(json.dumps(os.fsencode(sys.argv[1]).decode("utf-8", "replace"), ensure_ascii=False))' "$1"
	fi
}

# json_one: succeeds when stdin is exactly one JSON value.
json_one() {
	if [[ "$(json_tool)" == jq ]]; then
		jq -e -s 'length == 1' >/dev/null 2>&1
	else
		python3 -c 'import json, sys; json.loads(sys.stdin.read())' >/dev/null 2>&1
	fi
}

# ---- HTTP --------------------------------------------------------------------

log() { printf '%s worker %s: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${WORKER_ID:-?}" "$*" >&2; }

NONCE_SEQ=0
# nonce: unique within this process. Claims and heartbeats carry one because
# flowgate refuses the same signed request twice as a replay, and a version-1
# signature covers only the second and the body: two identical claims in one
# second would otherwise be one request sent twice. flowgate ignores the field.
nonce() {
	NONCE_SEQ=$((NONCE_SEQ + 1))
	printf '%s-%s-%s' "$$" "$NONCE_SEQ" "$RANDOM"
}

# api METHOD PATH BODY [MAX_SECONDS]: one signed request. Sets HTTP_STATUS
# (000 when no answer came) and HTTP_BODY.
api() {
	local method=$1 path=$2 body=$3 max=${4:-30} ts hdr out
	hdr=$(mktemp) out=$(mktemp)
	ts=$(date +%s)
	{
		printf 'Content-Type: application/json\n'
		if [[ -n "${HMAC_SECRET:-}" ]]; then
			printf 'X-Timestamp: %s\n' "$ts"
			# The queue API's own routes (claim, heartbeat) require version 2;
			# SIGNATURE_VERSION chooses only for the ACK/FAIL webhooks.
			if [[ "${SIGNATURE_VERSION:-1}" == 2 || "$path" == /queue/* ]]; then
				printf 'X-Signature-Version: 2\n'
				printf 'X-Signature: %s\n' "$(sign_v2 "$ts" "$method" "$API_PREFIX$path" "$body")"
			else
				printf 'X-Signature: %s\n' "$(sign "$ts" "$body")"
			fi
		fi
		if [[ -n "${WEBHOOK_TOKEN:-}" ]]; then
			printf 'Authorization: Bearer %s\n' "$WEBHOOK_TOKEN"
		fi
	} >"$hdr"
	HTTP_STATUS=$(printf '%s' "$body" | curl -sS -X "$method" -H "@$hdr" --data-binary @- \
		--max-time "$max" -o "$out" -w '%{http_code}' "$FLOWGATE_URL$path" 2>/dev/null) || true
	HTTP_STATUS=${HTTP_STATUS:-000}
	HTTP_BODY=$(cat "$out")
	rm -f "$hdr" "$out"
}

# error_text: "code: message (details)" of a flowgate error answer.
error_text() {
	local code msg details
	code=$(printf '%s' "$HTTP_BODY" | json_get error code 2>/dev/null) || true
	msg=$(printf '%s' "$HTTP_BODY" | json_get error message 2>/dev/null) || true
	details=$(printf '%s' "$HTTP_BODY" | json_get error details 2>/dev/null) || true
	printf '%s %s: %s%s' "$HTTP_STATUS" "${code:-?}" "${msg:-$HTTP_BODY}" "${details:+ $details}"
}

# fatal_status: 400 and 401 will not get better by retrying.
fatal_status() {
	case "$HTTP_STATUS" in
	401) log "flowgate refused our credentials: $(error_text) — check HMAC_SECRET / WEBHOOK_TOKEN and the clock"; exit 1 ;;
	400) log "flowgate refused the request: $(error_text)"; exit 1 ;;
	esac
}

# ---- the worker --------------------------------------------------------------

# report PATH BODY: sends an ACK or FAIL. Only what may get better is
# retried: no answer (000), 408, 429 and 5xx, six tries over about 30 s, each
# re-signed at least a second later, so it is a new request. Returns 0 when
# flowgate took it (200, duplicate included) or the task is no longer ours
# (404, 409: nothing to retry); 1 when flowgate refused it for good (any
# other answer: 400, 413, …; REFUSED holds "status code: message"); 2 when
# the tries ran out (the heartbeat monitor will put the task back to PENDING).
# 401 exits (fatal_status).
report() {
	local path=$1 body=$2 try delay=1
	REFUSED=""
	for try in 1 2 3 4 5 6; do
		api POST "$path" "$body"
		case "$HTTP_STATUS" in
		200)
			log "$path: $(printf '%s' "$HTTP_BODY" | json_get message) (status $(printf '%s' "$HTTP_BODY" | json_get status), requeued $(printf '%s' "$HTTP_BODY" | json_get requeued), dlq $(printf '%s' "$HTTP_BODY" | json_get dlq), duplicate $(printf '%s' "$HTTP_BODY" | json_get duplicate))"
			return 0
			;;
		409 | 404)
			# 409: the task moved on without us (a sweep recovered it, another
			# worker holds it, it is already DONE); current_status says where.
			log "$path refused, nothing to retry: $(error_text)"
			return 0
			;;
		401) fatal_status ;;
		000 | 408 | 429 | 5??) ;;
		*)
			REFUSED=$(error_text | head -c 1000)
			log "$path refused: $REFUSED"
			return 1
			;;
		esac
		log "$path: $(error_text) (try $try)"
		((try < 6)) || break
		sleep "$delay"
		delay=$((delay * 2))
	done
	log "$path: giving up; the heartbeat monitor will put the task back to PENDING"
	return 2
}

# fail_task IDS MESSAGE: FAILs the task with MESSAGE (flowgate keeps
# MaxErrorMessageBytes, 4 KiB, of it). A FAIL refused 400 exits 1: our
# requests are wrong, and every FAIL would be.
fail_task() {
	local rc=0
	report "$FAIL_PATH" "{$1,\"error_message\":$(json_str "$(printf '%s' "$2" | head -c 4096)")}" || rc=$?
	if ((rc == 1)); then
		fatal_status
		log "$FAIL_PATH: not retried; the heartbeat monitor will put the task back to PENDING"
	fi
	return 0
}

# ack_task IDS ACTIONS: ACKs the task with ACTIONS as experityActions. An ACK
# refused for good (413: ACTIONS over flowgate's body limit; 400: flowgate
# refuses what the job printed) cannot succeed however often it is sent, so
# the task is FAILed, saying why, instead of being left PROCESSING until the
# heartbeat monitor recovers it and the work runs again as if nothing was
# learned.
ack_task() {
	local rc=0
	report "$ACK_PATH" "{$1,\"experityActions\":$2}" || rc=$?
	if ((rc == 1)); then
		fail_task "$1" "ACK refused: $REFUSED (experityActions of $(printf '%s' "$2" | wc -c | tr -d ' ') bytes)"
	fi
	return 0
}

# ---- the job's process group ---------------------------------------------------

JOB_PID="" # the running job's pid, which is its process group's id; "" when none

# start_job DIR QID ENC ATTEMPTS: starts WORK_CMD in the background, in a
# process group of its own (set -m, only for that fork: job control would
# otherwise give each foreground command its own group and keep SIGINT from
# the worker), reading DIR/task.json, writing DIR/out and DIR/err.
start_job() {
	set -m
	TASK_QUEUE_ID=$2 TASK_ENCOUNTER_ID=$3 TASK_ATTEMPTS=$4 \
		bash -c "$WORK_CMD" <"$1/task.json" >"$1/out" 2>"$1/err" &
	JOB_PID=$!
	set +m
}

# group_alive PGID: succeeds while a process of group PGID runs. kill -0
# counts zombies too, which an init that does not reap (some containers)
# leaves behind, so ps, where it works, has the last word.
group_alive() {
	local procs
	kill -0 -- "-$1" 2>/dev/null || return 1
	procs=$(ps -A -o pgid= -o stat= 2>/dev/null) || return 0
	[[ -n "$procs" ]] || return 0
	awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }' <<<"$procs"
}

# stop_job: ends the job's whole process group: TERM (and CONT, so that a
# stopped process gets it), KILL what is left after KILL_GRACE seconds; then
# waits for the job's own process. Sets JOB_RC to its exit status.
stop_job() {
	local pgid=$JOB_PID i
	JOB_RC=0
	[[ -n "$pgid" ]] || return 0
	if group_alive "$pgid"; then
		kill -TERM -- "-$pgid" 2>/dev/null || true
		kill -CONT -- "-$pgid" 2>/dev/null || true
		for ((i = 0; i < KILL_GRACE * 10; i++)); do
			group_alive "$pgid" || break
			sleep 0.1
		done
		if group_alive "$pgid"; then
			log "work still running ${KILL_GRACE} s after TERM; sending KILL to its process group $pgid"
			kill -KILL -- "-$pgid" 2>/dev/null || true
		fi
	fi
	wait "$pgid" 2>/dev/null || JOB_RC=$?
	JOB_PID=""
}

# work TASK_JSON: runs WORK_CMD with heartbeats, then ACKs or FAILs.
work() {
	local task=$1 qid enc attempts dir pid rc last output errtail started timed_out=0
	qid=$(printf '%s' "$task" | json_get queue_id)
	enc=$(printf '%s' "$task" | json_get encounter_id)
	attempts=$(printf '%s' "$task" | json_get attempts)
	log "claimed $qid (encounter $enc, attempts ${attempts:-0})"
	dir=$(mktemp -d)
	printf '%s' "$task" >"$dir/task.json"
	start_job "$dir" "$qid" "$enc" "${attempts:-0}"
	pid=$JOB_PID
	last=$SECONDS
	started=$SECONDS
	while kill -0 "$pid" 2>/dev/null; do
		sleep 0.2
		if ((JOB_TIMEOUT > 0 && SECONDS - started >= JOB_TIMEOUT)); then
			log "$qid: work ran past JOB_TIMEOUT (${JOB_TIMEOUT} s); killing it"
			timed_out=1
			break
		fi
		if ((SECONDS - last >= HEARTBEAT_INTERVAL)) && kill -0 "$pid" 2>/dev/null; then
			last=$SECONDS
			api POST "/queue/$qid/heartbeat" "{\"worker_id\":$(json_str "$WORKER_ID"),\"nonce\":\"$(nonce)\"}"
			case "$HTTP_STATUS" in
			200) ;;
			409 | 404)
				log "heartbeat refused, the task is no longer ours: $(error_text); stopping the work"
				stop_job
				rm -rf "$dir"
				return 0
				;;
			400 | 401)
				stop_job
				fatal_status
				;;
			*) log "heartbeat: $(error_text); still working" ;;
			esac
		fi
	done
	if ((timed_out)); then
		stop_job
		rc=$JOB_RC
	else
		rc=0
		wait "$pid" || rc=$?
		# What the job left behind in its group is part of the job: it must
		# not run on once the task is reported.
		if group_alive "$pid"; then
			log "$qid: work exited but left processes running in its process group; stopping them"
			stop_job
		fi
		JOB_PID=""
	fi
	output=$(cat "$dir/out")
	errtail=$(tail -n 20 "$dir/err" | tail -c 2000)
	rm -rf "$dir"
	local ids
	ids="\"queue_id\":$(json_str "$qid"),\"encounter_id\":$(json_str "$enc"),\"worker_id\":$(json_str "$WORKER_ID")"
	if ((timed_out)); then
		fail_task "$ids" "work command timed out after ${JOB_TIMEOUT} s (JOB_TIMEOUT): $errtail"
		return 0
	fi
	if ((rc == 0)) && [[ -z "${output//[[:space:]]/}" ]]; then
		output='{}'
	fi
	if ((rc == 0)) && printf '%s' "$output" | json_one; then
		ack_task "$ids" "$output"
	elif ((rc == 0)); then
		fail_task "$ids" "work command printed output that is not one JSON value: $(printf '%s' "$output" | head -c 500)"
	else
		fail_task "$ids" "work command exited with status $rc: $errtail"
	fi
}

main() {
	set -euo pipefail
	FLOWGATE_URL=${FLOWGATE_URL:-}
	FLOWGATE_URL=${FLOWGATE_URL%/}
	WORKER_ID=${WORKER_ID:-$(hostname)-$$}
	WORK_CMD=${WORK_CMD:-}
	MAX_TASKS=${MAX_TASKS:-0}
	WAIT_MS=${WAIT_MS:-20000}
	IDLE_PAUSE=${IDLE_PAUSE:-1}
	HEARTBEAT_INTERVAL=${HEARTBEAT_INTERVAL:-30}
	JOB_TIMEOUT=${JOB_TIMEOUT:-10800}
	KILL_GRACE=${KILL_GRACE:-5}
	ACK_PATH=${ACK_PATH:-/ack}
	FAIL_PATH=${FAIL_PATH:-/fail}
	local bad=""
	[[ -n "$FLOWGATE_URL" ]] || bad="FLOWGATE_URL is required"
	[[ -n "${HMAC_SECRET:-}${WEBHOOK_TOKEN:-}" ]] || bad="HMAC_SECRET (or WEBHOOK_TOKEN) is required"
	[[ -n "$WORK_CMD" ]] || bad="WORK_CMD is required"
	[[ "$MAX_TASKS" =~ ^[0-9]+$ ]] || bad="MAX_TASKS must be a number"
	[[ "$WAIT_MS" =~ ^[0-9]+$ ]] && ((WAIT_MS <= 20000)) || bad="WAIT_MS must be 0..20000"
	[[ "$IDLE_PAUSE" =~ ^[0-9]+$ ]] && ((IDLE_PAUSE <= 60)) || bad="IDLE_PAUSE must be 0..60 seconds"
	[[ "$HEARTBEAT_INTERVAL" =~ ^[0-9]+$ ]] && ((HEARTBEAT_INTERVAL > 0)) || bad="HEARTBEAT_INTERVAL must be a positive number of seconds"
	[[ "$JOB_TIMEOUT" =~ ^[0-9]+$ ]] || bad="JOB_TIMEOUT must be a number of seconds (0 = none)"
	[[ "$KILL_GRACE" =~ ^[0-9]+$ ]] && ((KILL_GRACE <= 300)) || bad="KILL_GRACE must be 0..300 seconds"
	[[ "${SIGNATURE_VERSION:-1}" =~ ^[12]$ ]] || bad="SIGNATURE_VERSION must be 1 or 2"
	command -v curl >/dev/null 2>&1 || bad="curl is required"
	[[ "$(json_tool)" == jq || "$(json_tool)" == python3 ]] || bad="JSON_TOOL must be jq or python3"
	command -v "$(json_tool)" >/dev/null 2>&1 || bad="jq or python3 is required"
	if [[ -n "${HMAC_SECRET:-}" ]] && ! command -v openssl >/dev/null 2>&1 && ! command -v python3 >/dev/null 2>&1; then
		bad="openssl or python3 is required to sign"
	fi
	if [[ -n "$bad" ]]; then
		log "$bad"
		exit 2
	fi
	# The path part of FLOWGATE_URL (behind a prefix-preserving proxy), signed
	# by version 2 as part of the target.
	API_PREFIX=""
	if [[ "$FLOWGATE_URL" =~ ^[a-zA-Z][a-zA-Z0-9+.-]*://[^/]+(/.*)?$ ]]; then
		API_PREFIX=${BASH_REMATCH[1]}
	fi

	local stop=0 done_tasks=0 backoff=1 claim task
	trap 'stop=1; log "signal received; stopping after the current task"' TERM INT
	trap 'log "SIGHUP: stopping the work and exiting"; exit 129' HUP
	# Whatever ends the worker (exit 1, an error under set -e, SIGHUP), the
	# job does not outlive it.
	trap 'if [[ -n "$JOB_PID" ]]; then log "exiting; stopping the running work"; stop_job; fi' EXIT
	if ((MAX_TASKS == 0)); then
		log "started against $FLOWGATE_URL"
	else
		log "started against $FLOWGATE_URL (stopping after $MAX_TASKS task(s))"
	fi
	while ((stop == 0)) && ((MAX_TASKS == 0 || done_tasks < MAX_TASKS)); do
		claim="{\"worker_id\":$(json_str "$WORKER_ID"),\"limit\":1,\"wait_ms\":$WAIT_MS,\"nonce\":\"$(nonce)\"}"
		api POST /queue/claim "$claim" $((WAIT_MS / 1000 + 15))
		case "$HTTP_STATUS" in
		200)
			backoff=1
			task=$(printf '%s' "$HTTP_BODY" | json_get tasks 0)
			if [[ -n "$task" ]]; then
				work "$task"
				done_tasks=$((done_tasks + 1))
			fi
			;;
		204)
			# Nothing pending within WAIT_MS: claim again, after a pause when
			# the claim was not a long poll (WAIT_MS=0 would claim in a tight
			# loop on an empty queue).
			backoff=1
			if ((WAIT_MS < 1000 && IDLE_PAUSE > 0)); then
				sleep "$IDLE_PAUSE"
			fi
			;;
		400 | 401) fatal_status ;;
		*)
			log "claim: $(error_text); retrying in ${backoff}s"
			sleep "$backoff"
			backoff=$((backoff < 30 ? backoff * 2 : 30))
			;;
		esac
	done
	log "stopped after $done_tasks task(s)"
}

if [[ "${FLOWGATE_WORKER_SOURCE_ONLY:-}" != 1 ]]; then
	main "$@"
fi
