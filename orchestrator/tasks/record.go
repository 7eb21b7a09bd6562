package tasks

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// taskFromFields renders a task hash as the wire Task (without history).
func taskFromFields(f map[string]string) contracts.Task {
	t := contracts.Task{
		QueueID:      f["queue_id"],
		EncounterID:  f["encounter_id"],
		Status:       contracts.Status(f["status"]),
		Priority:     contracts.Priority(f["priority"]),
		Attempts:     atoi(f["attempts"]),
		MaxAttempts:  atoi(f["max_attempts"]),
		Recoveries:   atoi(f["recoveries"]), // absent (a task from before recoveries were counted): 0
		ErrorMessage: f["error_message"],
		WorkerID:     f["worker_id"],
		CreatedAt:    msTime(f["created_at"]),
		UpdatedAt:    msTime(f["updated_at"]),
		ClaimedAt:    msTimePtr(f["claimed_at"]),
		HeartbeatAt:  msTimePtr(f["heartbeat_at"]),
	}
	if p, ok := f["payload"]; ok && p != "" {
		t.Payload = json.RawMessage(p)
	}
	actions, hasActions := f["actions"]
	t.ParsedPayload = parsedPayload(f["pp"], actions, hasActions, f["dlq"] == "1")
	return t
}

// parsedPayload assembles parsed_payload from its stored parts: the base
// object, the ACK's experityActions and the dlq flag. Kept apart, the raw
// JSON of each part comes back exactly as it was given.
func parsedPayload(base, actions string, hasActions, dlq bool) json.RawMessage {
	if base == "" && !hasActions && !dlq {
		return nil
	}
	m := map[string]json.RawMessage{}
	if base != "" {
		_ = json.Unmarshal([]byte(base), &m) // stored only after validation as an object
	}
	if hasActions {
		m[keyExperityActions] = json.RawMessage(actions)
	}
	if dlq {
		m[keyDLQ] = json.RawMessage("true")
	} else {
		delete(m, keyDLQ)
	}
	out, _ := json.Marshal(m)
	return out
}

const (
	keyExperityActions = "experityActions"
	keyDLQ             = "dlq"
)

// historyEvent is a history entry as the scripts write it (cjson, at in ms
// as a string).
type historyEvent struct {
	At     json.RawMessage `json:"at"`
	From   string          `json:"from"`
	To     string          `json:"to"`
	By     string          `json:"by"`
	Reason string          `json:"reason"`
}

func decodeHistory(entries []string) []contracts.TaskEvent {
	out := make([]contracts.TaskEvent, 0, len(entries))
	for _, e := range entries {
		var h historyEvent
		if json.Unmarshal([]byte(e), &h) != nil {
			continue
		}
		at := string(h.At)
		if uq, err := strconv.Unquote(at); err == nil {
			at = uq
		}
		out = append(out, contracts.TaskEvent{At: msTime(at), From: contracts.Status(h.From), To: contracts.Status(h.To),
			By: h.By, Reason: h.Reason})
	}
	return out
}

// atoi is s as an int, 0 for an absent field ("": a brief reply has no
// max_attempts or recoveries) or one that is not a number. The empty
// string is answered before Atoi, whose error for it is an allocation on
// every ACK.
func atoi(s string) int {
	if s == "" {
		return 0
	}
	n, _ := strconv.Atoi(s)
	return n
}

func msTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

func msTimePtr(s string) *time.Time {
	if s == "" {
		return nil
	}
	t := msTime(s)
	return &t
}

// taskFields are the fields of a task hash in the order the scripts answer
// them (FIELDS in the prelude; TestScriptFieldsMatch keeps the two equal).
var taskFields = []string{"queue_id", "encounter_id", "status", "priority", "attempts", "max_attempts", "recoveries", "payload",
	"fp", "pp", "actions", "actions_fp", "dlq", "error_message", "worker_id", "created_at", "updated_at", "claimed_at",
	"heartbeat_at", "claim", "seq", "pseq", "ifp"}

// briefFields are the fields of a brief reply (BRIEF in the prelude): what
// the ACK script decides on and the ACK webhook reports.
var briefFields = []string{"status", "encounter_id", "worker_id", "attempts", "priority", "dlq", "claim", "seq", "actions_fp"}

// claimFields are the fields of a claim's reply (CLAIMOUT in the prelude):
// a claimed task's fields but those the claim set (claimedTask fills them
// in) and those taskFromFields does not show.
var claimFields = []string{"queue_id", "encounter_id", "priority", "attempts", "max_attempts", "recoveries", "payload", "pp",
	"actions", "dlq", "error_message", "created_at"}

// claimedTask is the task of a claim reply's record (claimFields' order):
// PROCESSING under worker since now.
func claimedTask(v any, worker string, now int64) (contracts.Task, bool) {
	arr, ok := v.([]any)
	if !ok || len(arr) != len(claimFields) {
		return contracts.Task{}, false
	}
	f := fieldMap(arr, claimFields)
	ms := strconv.FormatInt(now, 10)
	f["status"], f["worker_id"] = string(contracts.StatusProcessing), worker
	f["claimed_at"], f["heartbeat_at"], f["updated_at"] = ms, ms, ms
	return taskFromFields(f), true
}

func fieldMap(arr []any, names []string) map[string]string {
	m := make(map[string]string, len(arr))
	for i, x := range arr {
		if x != nil {
			m[names[i]] = str(x)
		}
	}
	return m
}

// recordMap turns a script's task record (taskFields' or briefFields'
// order, nil for an absent field; an empty array for no task) into a field
// map.
func recordMap(v any) (map[string]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	names := taskFields
	switch len(arr) {
	case 0, len(taskFields):
	case len(briefFields):
		names = briefFields
	default:
		return nil, false
	}
	return fieldMap(arr, names), true
}
