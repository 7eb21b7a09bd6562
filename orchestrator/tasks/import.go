package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/contracts"
)

// ImportTask is one task of another queue — the old queue API that the
// n8n workflow managed, whose GET /queue answers the shape flowgate's own
// answers — as an Importer takes it.
type ImportTask struct {
	QueueID     string // a UUID (required)
	EncounterID string
	Status      contracts.Status   // its status there (required)
	Priority    contracts.Priority // "" = NORMAL
	Attempts    int                // FAILs so far
	MaxAttempts int                // 0 = Config.MaxAttempts
	Payload     json.RawMessage
	// ParsedPayload is an object or null; its experityActions and dlq are
	// kept as the ledger keeps them (dlq only counts on an ERROR task).
	ParsedPayload json.RawMessage
	ErrorMessage  string
	WorkerID      string    // who held it, when PROCESSING there (history only)
	CreatedAt     time.Time // zero = now
	UpdatedAt     time.Time // its last update there (history only); zero = unknown
	// History is its history there, oldest first; events without At are
	// dropped, the rest kept before the import event (within
	// Config.HistoryLimit, newest kept).
	History []contracts.TaskEvent
}

// ImportOutcome is what an import did, or in a dry run would do, with one
// task.
type ImportOutcome string

// The outcomes of an import.
const (
	ImportImported  ImportOutcome = "imported"  // written to the ledger
	ImportUnchanged ImportOutcome = "unchanged" // imported before from the same content: nothing written
	ImportConflict  ImportOutcome = "conflict"  // its queue_id or its encounter's open task stands in the way: nothing written
	ImportInvalid   ImportOutcome = "invalid"   // not a task the ledger can hold: nothing written
)

// ImportResult is the outcome for one task, in the order given.
type ImportResult struct {
	QueueID string
	From    contracts.Status // its status at the source
	// Status is the task's status in the ledger: as imported, or as stored
	// (unchanged, conflict on queue_id); "" when invalid.
	Status      contracts.Status
	Priority    contracts.Priority // as imported ("" unless imported)
	DLQ         bool               // imported as a dead letter
	Outcome     ImportOutcome
	Reason      string // conflict or invalid: why; imported: what the import changed, if anything
	OpenQueueID string // conflict "encounter_open": the encounter's open task
}

// MaxImportBatch is how many tasks one import script call takes; an
// Import of more runs several, each atomic.
const MaxImportBatch = 100

// An Importer brings the tasks of another queue into the ledger, batch by
// batch, for one source. Import is idempotent by queue_id: each imported
// task keeps a fingerprint of the content it was imported from, so
// importing it again is unchanged and importing other content for it is a
// conflict; nothing already in the ledger is ever overwritten. An
// Importer is not safe for concurrent use (a dry run keeps track of what it
// would have written).
//
// How a task is imported:
//
//   - PENDING stays PENDING, its priority kept, queued (claim order) after
//     every task pending now, in the order imported.
//   - PROCESSING becomes PENDING with HIGH priority, no attempt counted:
//     its worker reports to the source, whose ACK or FAIL the ledger would
//     never see, so it would sit PROCESSING until a sweep recovered it.
//     Worker and the reason are in the import event.
//   - ERROR keeps attempts and error_message. It is a dead letter when the
//     source marked it one (parsed_payload.dlq) or when attempts have
//     reached max_attempts (the ledger's rule; error_message becomes
//     contracts.DLQErrorMessage, the source's kept in history); otherwise
//     it awaits a retry, which the retry-overdue sweep performs once it is
//     RETRY_OVERDUE_AFTER old (no requeue was scheduled for it).
//   - DONE stays DONE with its experityActions.
//
// created_at is kept (the SLA sweep promotes a task pending longer than
// its threshold); updated_at is the import's time. The per-encounter rule
// holds: a task that would be open (PENDING, PROCESSING, ERROR awaiting a
// retry) while another task of its encounter is open is a conflict.
type Importer struct {
	l      *Ledger
	source string
	dry    bool
	// A dry run writes nothing, so it remembers what it would have written.
	seen map[string]string // queue_id → import fingerprint
	open map[string]string // encounter_id → queue_id
}

// NewImporter returns an Importer of tasks from source (named in each
// import event: the old API's base URL, say); dryRun decides everything
// as Import would and writes nothing.
func (l *Ledger) NewImporter(source string, dryRun bool) *Importer {
	return &Importer{l: l, source: source, dry: dryRun, seen: map[string]string{}, open: map[string]string{}}
}

// DryRun reports whether the Importer writes nothing.
func (im *Importer) DryRun() bool { return im.dry }

// importItem is a validated ImportTask as the import script takes it.
type importItem struct {
	ID           string   `json:"id"`
	Enc          string   `json:"enc"`
	Status       string   `json:"status"`
	Priority     string   `json:"priority"`
	Attempts     string   `json:"attempts"`
	MaxAttempts  string   `json:"max_attempts"`
	Payload      string   `json:"payload"`
	FP           string   `json:"fp"`
	PP           string   `json:"pp"`
	Actions      string   `json:"actions"`
	ActionsFP    string   `json:"actions_fp"`
	DLQ          string   `json:"dlq"`
	ErrorMessage string   `json:"error_message"`
	CreatedAt    string   `json:"created_at"`
	IFP          string   `json:"ifp"`
	History      []string `json:"history"`
	Reason       string   `json:"reason"`

	res ImportResult // filled in as far as validation goes
}

// Import imports tasks (any number; MaxImportBatch per atomic script call)
// and returns one result per task, in order. An error means the store
// failed: the batches before the failing one are written, the rest are
// not, and the results are nil (importing again resumes: what was written
// is unchanged). Tasks that cannot be imported are results, not errors.
func (im *Importer) Import(ctx context.Context, in []ImportTask) ([]ImportResult, error) {
	const op = "tasks.Import"
	now := im.l.cfg.Now()
	out := make([]ImportResult, len(in))
	var batch []importItem
	var at []int // out index of each batch item
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		res, err := im.run(ctx, op, now, batch)
		if err != nil {
			return err
		}
		for i, r := range res {
			out[at[i]] = r
		}
		batch, at = batch[:0], at[:0]
		return nil
	}
	for i, t := range in {
		it, err := im.prepare(op, t, now)
		if err != nil {
			var e *contracts.Error
			msg := err.Error()
			if errors.As(err, &e) {
				msg = e.Message
			}
			it.res.Outcome, it.res.Reason = ImportInvalid, msg
			out[i] = it.res
			continue
		}
		batch, at = append(batch, it), append(at, i)
		if len(batch) == MaxImportBatch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// checked is an ImportTask validated, in the ledger's forms.
type checked struct {
	id, payload, fp, ppFP, errMsg string
	prio                          contracts.Priority
	maxAttempts                   int
	pp                            ppParts
}

// check validates t (the checks of a create, plus status and attempts).
func (im *Importer) check(op string, t ImportTask) (checked, error) {
	var c checked
	var err error
	if c.id, err = queueID(op, strings.TrimSpace(t.QueueID)); err != nil {
		return c, err
	}
	if !t.Status.Valid() {
		return c, invalid(op, "status", "status must be one of PENDING, PROCESSING, DONE, ERROR; got %q", t.Status)
	}
	if err := label(op, "encounter_id", t.EncounterID, false); err != nil {
		return c, err
	}
	if c.prio, err = contracts.ParsePriority(string(t.Priority), contracts.PriorityNormal); err != nil {
		return c, err
	}
	c.maxAttempts = t.MaxAttempts
	if c.maxAttempts == 0 {
		c.maxAttempts = im.l.cfg.MaxAttempts
	}
	switch {
	case c.maxAttempts < 1 || c.maxAttempts > contracts.MaxMaxAttempts:
		return c, invalid(op, "max_attempts", "max_attempts must be 1..%d, got %d", contracts.MaxMaxAttempts, c.maxAttempts)
	case t.Attempts < 0 || t.Attempts > 10_000:
		return c, invalid(op, "attempts", "attempts must be 0..10000, got %d", t.Attempts)
	}
	if c.payload, c.fp, err = jsonValue(op, "payload", t.Payload); err != nil {
		return c, err
	}
	if t.EncounterID == "" && c.payload == "" {
		return c, invalid(op, "encounter_id", "a task needs an encounter_id or a payload (neither was given)")
	}
	c.ppFP = fingerprint([]byte("null"))
	if raw := json.RawMessage(strings.TrimSpace(string(t.ParsedPayload))); len(raw) > 0 {
		if c.pp, err = splitParsedPayload(op, raw); err != nil {
			return c, err
		}
		if _, c.ppFP, err = jsonValue(op, "parsed_payload", raw); err != nil {
			return c, err
		}
	}
	c.errMsg = message(t.ErrorMessage)
	return c, nil
}

// importFingerprint is the task's content at the source, as given
// (defaults not applied, so that a later change of a default is not a
// change of content).
func importFingerprint(t ImportTask, c checked) string {
	givenPrio, givenCreated := "", int64(0)
	if strings.TrimSpace(string(t.Priority)) != "" {
		givenPrio = string(c.prio)
	}
	if !t.CreatedAt.IsZero() {
		givenCreated = t.CreatedAt.UnixMilli()
	}
	b, _ := json.Marshal([]any{c.id, t.EncounterID, t.Status, givenPrio, t.Attempts, t.MaxAttempts,
		c.fp, c.ppFP, c.errMsg, givenCreated})
	return fingerprint(b)
}

// placement is where a task lands in the ledger, and why if that differs
// from where it was.
type placement struct {
	status contracts.Status
	prio   contracts.Priority
	dlq    bool
	errMsg string
	notes  []string
}

// place applies the import's rules (see Importer) to a checked task.
func place(t ImportTask, c checked) placement {
	p := placement{status: t.Status, prio: c.prio, errMsg: c.errMsg}
	switch t.Status {
	case contracts.StatusProcessing:
		p.status, p.prio = contracts.StatusPending, contracts.PriorityHigh
		who := ""
		if t.WorkerID != "" {
			who = " under worker " + t.WorkerID
		}
		p.notes = append(p.notes, "was PROCESSING"+who+" at the source; requeued as PENDING with priority HIGH, no attempt counted: its worker reports to the source, so its ACK or FAIL would never reach this ledger")
	case contracts.StatusError:
		switch {
		case c.pp.dlq:
			p.dlq = true
			if p.errMsg == "" {
				p.errMsg = contracts.DLQErrorMessage
			}
		case t.Attempts >= c.maxAttempts:
			p.dlq = true
			if p.errMsg != "" {
				p.notes = append(p.notes, "its error: "+p.errMsg)
			}
			p.errMsg = contracts.DLQErrorMessage
			p.notes = append(p.notes, fmt.Sprintf("moved to the dead letter queue: attempts %d reached max_attempts %d", t.Attempts, c.maxAttempts))
		default:
			p.notes = append(p.notes, "awaits a retry: the retry-overdue sweep requeues it")
		}
	}
	if c.pp.dlq && !p.dlq {
		p.notes = append(p.notes, "parsed_payload.dlq dropped: only an ERROR task can be a dead letter")
	}
	return p
}

// sourceHistory renders the source's events as the scripts write events;
// events without a time are dropped.
func sourceHistory(events []contracts.TaskEvent) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		if e.At.IsZero() {
			continue
		}
		by := e.By
		if by == "" {
			by = "source"
		}
		b, _ := json.Marshal(historyEvent{At: json.RawMessage(strconv.Quote(strconv.FormatInt(e.At.UnixMilli(), 10))),
			From: string(e.From), To: string(e.To), By: by, Reason: message(e.Reason)})
		out = append(out, string(b))
	}
	return out
}

// prepare validates t and decides how it is imported.
func (im *Importer) prepare(op string, t ImportTask, now time.Time) (importItem, error) {
	it := importItem{res: ImportResult{QueueID: t.QueueID, From: t.Status}}
	c, err := im.check(op, t)
	if c.id != "" {
		it.res.QueueID = c.id
	}
	if err != nil {
		return it, err
	}
	p := place(t, c)
	reason := fmt.Sprintf("imported from %s (there: %s, priority %s, attempts %d of %d", im.source, t.Status, c.prio, t.Attempts, c.maxAttempts)
	if !t.UpdatedAt.IsZero() {
		reason += ", last updated " + t.UpdatedAt.UTC().Format(time.RFC3339)
	}
	reason += ")"
	for _, n := range p.notes {
		reason += "; " + n
	}
	created := now
	if !t.CreatedAt.IsZero() {
		created = t.CreatedAt
	}
	it.ID, it.Enc, it.Status, it.Priority = c.id, t.EncounterID, string(p.status), string(p.prio)
	it.Attempts, it.MaxAttempts = strconv.Itoa(t.Attempts), strconv.Itoa(c.maxAttempts)
	it.Payload, it.FP, it.PP = c.payload, c.fp, c.pp.base
	if c.pp.hasActions {
		it.Actions, it.ActionsFP = c.pp.actions, c.pp.actionsFP
	}
	it.DLQ, it.ErrorMessage = flag(p.dlq), p.errMsg
	it.CreatedAt = strconv.FormatInt(created.UnixMilli(), 10)
	it.IFP, it.History, it.Reason = importFingerprint(t, c), sourceHistory(t.History), message(reason)
	it.res.Status, it.res.Priority, it.res.DLQ = p.status, p.prio, p.dlq
	it.res.Reason = strings.Join(p.notes, "; ")
	return it, nil
}

// run imports one batch: with one script call, or on a sharded ledger one
// per home shard (runSharded).
func (im *Importer) run(ctx context.Context, op string, now time.Time, batch []importItem) ([]ImportResult, error) {
	if im.l.set.N() > 1 {
		return im.runSharded(ctx, op, now, batch)
	}
	return im.runIn(ctx, op, 0, now, batch)
}

// runIn imports a batch of tasks whose home is shard sh with one script
// call.
func (im *Importer) runIn(ctx context.Context, op string, sh int, now time.Time, batch []importItem) ([]ImportResult, error) {
	args := make([]any, 0, 1+len(batch))
	args = append(args, flag(im.dry))
	own := make([]string, 0, 4*len(batch))
	for _, it := range batch {
		own = append(own, im.l.ks[sh].itemKeys(it.ID, it.Enc, im.l.set.N() > 1)...)
		b, err := json.Marshal(it)
		if err != nil {
			return nil, &contracts.Error{Code: contracts.CodeInternal, Op: op, Message: "encode import item", Err: err}
		}
		args = append(args, string(b))
	}
	v, err := im.l.run(ctx, op, lua.importTasks, sh, now, im.l.ks[sh].scriptKeys(own...), args...)
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != len(batch) {
		return nil, badReply(op, v)
	}
	out := make([]ImportResult, len(batch))
	for i, raw := range arr {
		r, ok := raw.([]any)
		if !ok || len(r) < 5 {
			return nil, badReply(op, v)
		}
		code, _ := r[0].(int64)
		res := batch[i].res
		switch code {
		case codeOK:
			res.Outcome = ImportImported
			if im.dry {
				res = im.track(batch[i], res)
			}
		case codeNoop:
			res = ImportResult{QueueID: res.QueueID, From: res.From, Status: contracts.Status(str(r[2])), Outcome: ImportUnchanged}
		case codeConflict:
			res = ImportResult{QueueID: res.QueueID, From: res.From, Status: contracts.Status(str(r[2])), Outcome: ImportConflict,
				OpenQueueID: str(r[4])}
			res.Reason = importConflictText(str(r[3]), res.OpenQueueID)
		default:
			return nil, badReply(op, v)
		}
		out[i] = res
	}
	return out, nil
}

// track applies, in a dry run, what the tasks before it in this run would
// have written: a queue_id seen before is unchanged or a conflict, and an
// encounter left open by an earlier task refuses a second open one.
func (im *Importer) track(it importItem, res ImportResult) ImportResult {
	if ifp, seen := im.seen[it.ID]; seen {
		out := ImportResult{QueueID: res.QueueID, From: res.From, Status: res.Status, Outcome: ImportUnchanged}
		if ifp != it.IFP {
			out.Outcome, out.Reason = ImportConflict, importConflictText("different_content", "")
		}
		return out
	}
	open := it.Status == string(contracts.StatusPending) || it.Status == string(contracts.StatusProcessing) ||
		(it.Status == string(contracts.StatusError) && it.DLQ != "1")
	if open && it.Enc != "" {
		if other, ok := im.open[it.Enc]; ok {
			return ImportResult{QueueID: res.QueueID, From: res.From, Status: res.Status, Outcome: ImportConflict,
				OpenQueueID: other, Reason: importConflictText("encounter_open", other)}
		}
		im.open[it.Enc] = it.ID
	}
	im.seen[it.ID] = it.IFP
	return res
}

func importConflictText(reason, other string) string {
	switch reason {
	case "different_content":
		return "queue_id was imported before from different content (the task changed at the source since)"
	case "not_imported":
		return "queue_id already names a task of this ledger that no import wrote"
	case "encounter_open":
		return "another task of the same encounter is open: " + other
	case "located":
		return locatedText
	}
	return reason
}
