package buffer

import (
	"encoding/json"
	"testing"
	"time"
)

// A completion record appended by hand is what json.Marshal writes:
// with and without a result, truncated or not, times in and out of UTC
// with and without nanoseconds, worker ids that need escaping.
func TestCompletionAppendJSONMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 4, 5, 123456789, time.UTC)
	ny, _ := time.LoadLocation("America/New_York")
	for i, r := range []completion{
		{ProcessingStartedAt: at, CompletedAt: at.Add(time.Millisecond), WorkerID: "host:123", AttemptCount: 1},
		{Result: json.RawMessage(`{"ok":true,"n":[1,2]}`), ProcessingStartedAt: at.Truncate(time.Second), CompletedAt: at, WorkerID: "h", AttemptCount: 3},
		{Result: json.RawMessage(`"x"`), ResultTruncated: true, ProcessingStartedAt: at.In(ny), CompletedAt: at.In(time.FixedZone("", 5*3600+1800)), WorkerID: `w"<é>\` + "\n", AttemptCount: 0},
		{ResultTruncated: true, WorkerID: "", AttemptCount: -1},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		worker, _ := json.Marshal(r.WorkerID)
		if got := r.appendJSON(nil, worker); string(got) != string(want) {
			t.Errorf("case %d:\n got  %s\n want %s", i, got, want)
		}
	}
}

func BenchmarkCompletionRecord(b *testing.B) {
	r := completion{Result: json.RawMessage(`{"ok":true}`), ProcessingStartedAt: time.Now().UTC(), CompletedAt: time.Now().UTC(), WorkerID: "host:123", AttemptCount: 1}
	worker, _ := json.Marshal(r.WorkerID)
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = r.appendJSON(make([]byte, 0, 160+len(r.Result)), worker)
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(r)
		}
	})
}
