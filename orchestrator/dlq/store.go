package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/orchestrator/keyspace"
)

// Source says which writer recorded a dead letter first.
type Source string

// Writers of the record.
const (
	SourceErrorHandler Source = "error_handler"
	SourceReconciler   Source = "reconciler"
	// SourceTasks: a dead letter of the VM task ledger (package tasks),
	// recorded with the archived task that replays it.
	SourceTasks Source = "tasks"
)

// Record is one dead letter. Payload is the task payload as asynq stored it
// (flowgate task payloads never carry secrets).
type Record struct {
	TaskID   string    `json:"task_id"`
	Queue    string    `json:"queue"`
	Type     string    `json:"type"`
	Payload  []byte    `json:"payload"`
	Error    string    `json:"error"`
	Retried  int       `json:"retried"`
	MaxRetry int       `json:"max_retry"`
	FailedAt time.Time `json:"failed_at"`
	Source   Source    `json:"source"`
	Recorded time.Time `json:"recorded_at"`
}

// Store reads and writes the durable record.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	queues []string
	now    func() time.Time
}

// NewStore returns a Store over the given queues. prefix defaults to
// "flowgate"; now to time.Now.
func NewStore(rdb redis.UniversalClient, prefix string, queues []string, now func() time.Time) *Store {
	if prefix == "" {
		prefix = keyspace.DefaultKeyPrefix
	}
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, prefix: prefix, queues: append([]string(nil), queues...), now: now}
}

// Queues lists the queues the store covers.
func (s *Store) Queues() []string { return append([]string(nil), s.queues...) }

// Record writes r. With overwrite false an existing record is kept. It
// reports whether the task was not recorded before.
func (s *Store) Record(ctx context.Context, r Record, overwrite bool) (bool, error) {
	n, err := s.record(ctx, s.rdb, r, overwrite).Int()
	if err != nil {
		return false, fmt.Errorf("dlq: record %s/%s: %w", r.Queue, r.TaskID, err)
	}
	return n == recordNew, nil
}

func (s *Store) record(ctx context.Context, c redis.Scripter, r Record, overwrite bool) *redis.Cmd {
	if r.Recorded.IsZero() {
		r.Recorded = s.now().UTC()
	}
	if r.FailedAt.IsZero() {
		r.FailedAt = r.Recorded
	}
	body, err := json.Marshal(r)
	if err != nil { // Record always marshals; keep the error path honest
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	mode := "nx"
	if overwrite {
		mode = "set"
	}
	return recordScript.Run(ctx, c, []string{recKey(s.prefix, r.Queue), idxKey(s.prefix, r.Queue)},
		r.TaskID, body, r.FailedAt.UnixMilli(), mode)
}

// RecordMany writes records without overwriting, in one pipeline, and
// returns how many were new.
func (s *Store) RecordMany(ctx context.Context, rs []Record) (int, error) {
	if len(rs) == 0 {
		return 0, nil
	}
	// Make sure the script is cached so the pipelined EVALSHAs succeed.
	if err := recordScript.Load(ctx, s.rdb).Err(); err != nil {
		return 0, fmt.Errorf("dlq: load script: %w", err)
	}
	cmds := make([]*redis.Cmd, len(rs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range rs {
			cmds[i] = s.record(ctx, p, r, false)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("dlq: record batch: %w", err)
	}
	added := 0
	for _, c := range cmds {
		if n, _ := c.Int(); n == recordNew {
			added++
		}
	}
	return added, nil
}

// Has reports whether a task is recorded.
func (s *Store) Has(ctx context.Context, queue, id string) (bool, error) {
	ok, err := s.rdb.HExists(ctx, recKey(s.prefix, queue), id).Result()
	if err != nil {
		return false, fmt.Errorf("dlq: has: %w", err)
	}
	return ok, nil
}

// Get returns one record, or ok=false.
func (s *Store) Get(ctx context.Context, queue, id string) (Record, bool, error) {
	raw, err := s.rdb.HGet(ctx, recKey(s.prefix, queue), id).Bytes()
	if errors.Is(err, redis.Nil) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("dlq: get: %w", err)
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return Record{}, false, fmt.Errorf("dlq: decode %s/%s: %w", queue, id, err)
	}
	return r, true, nil
}

// List returns records of a queue, newest first, from offset.
func (s *Store) List(ctx context.Context, queue string, offset, limit int64) ([]Record, error) {
	ids, err := s.rdb.ZRevRange(ctx, idxKey(s.prefix, queue), offset, offset+limit-1).Result()
	if err != nil {
		return nil, fmt.Errorf("dlq: list: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	raws, err := s.rdb.HMGet(ctx, recKey(s.prefix, queue), ids...).Result()
	if err != nil {
		return nil, fmt.Errorf("dlq: list: %w", err)
	}
	out := make([]Record, 0, len(raws))
	for _, raw := range raws {
		str, ok := raw.(string)
		if !ok {
			continue // deleted between the two reads
		}
		var r Record
		if err := json.Unmarshal([]byte(str), &r); err != nil {
			return nil, fmt.Errorf("dlq: decode: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Delete removes a record on purpose (an operator resolved it).
func (s *Store) Delete(ctx context.Context, queue, id string) (bool, error) {
	n, err := deleteScript.Run(ctx, s.rdb, []string{recKey(s.prefix, queue), idxKey(s.prefix, queue)}, id).Int()
	if err != nil {
		return false, fmt.Errorf("dlq: delete: %w", err)
	}
	return n == deleteRemoved, nil
}

// Size returns the number of records per queue.
func (s *Store) Size(ctx context.Context) (map[string]int64, error) {
	out := make(map[string]int64, len(s.queues))
	for _, q := range s.queues {
		n, err := s.rdb.HLen(ctx, recKey(s.prefix, q)).Result()
		if err != nil {
			return nil, fmt.Errorf("dlq: size %s: %w", q, err)
		}
		out[q] = n
	}
	return out, nil
}
