package taskimport

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/hmacsig"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// Options configure one import run.
type Options struct {
	// From is the old API's base URL: pages are GET <From>/queue.
	From string
	// Secret signs every request (HMAC-SHA256, X-Timestamp and X-Signature).
	Secret []byte
	// SignatureVersion is 1 (the seed's scheme, the default: timestamp and
	// body) or 2 (method and target signed too; X-Signature-Version: 2).
	SignatureVersion int
	// Statuses are fetched in this order, each paged on its own. Default
	// DefaultStatuses.
	Statuses []contracts.Status
	// PageSize is the limit of each GET /queue (default DefaultPageSize).
	PageSize int
	// DryRun decides everything and writes nothing.
	DryRun bool
	// Timeout bounds each request (default DefaultTimeout).
	Timeout time.Duration
	// MaxPages stops the run after this many pages, all statuses
	// together (default DefaultMaxPages): the last guard against an API
	// that pages forever.
	MaxPages int

	// For tests: the HTTP client (default one with Timeout; used without
	// its CheckRedirect: a redirect is an error, never followed), the clock that
	// stamps signatures and the wait for the next second (defaults
	// time.Now and a timer).
	HTTPClient *http.Client
	Now        func() time.Time
	Sleep      func(context.Context, time.Duration) error
}

// Defaults of Options.
const (
	DefaultPageSize = 500
	MaxPageSize     = contracts.MaxListLimit
	DefaultTimeout  = 30 * time.Second
	// DefaultMaxPages: 10,000 pages of the default 500 are 5 million
	// tasks, far above any queue the seed's API held.
	DefaultMaxPages = 10_000
)

// DefaultStatuses are the statuses imported unless told otherwise: the
// open work. DONE is history; --include-done adds it.
func DefaultStatuses() []contracts.Status {
	return []contracts.Status{contracts.StatusPending, contracts.StatusProcessing, contracts.StatusError}
}

func (o Options) withDefaults() Options {
	if o.SignatureVersion == 0 {
		o.SignatureVersion = 1
	}
	if len(o.Statuses) == 0 {
		o.Statuses = DefaultStatuses()
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxPages == 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: o.Timeout}
	}
	o.HTTPClient = hmacsig.NoRedirect(o.HTTPClient) // its requests are signed: never to a host --from did not name
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	return o
}

func (o Options) validate() (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(o.From))
	switch {
	case o.From == "":
		return nil, fmt.Errorf("--from is required: the old queue API's base URL (GET <URL>/queue)")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("--from %q is not an http(s) URL", o.From)
	case len(o.Secret) == 0:
		return nil, fmt.Errorf("no HMAC secret for the old API: pass --secret, or set IMPORT_HMAC_SECRET (default HMAC_SECRET)")
	case o.SignatureVersion != 1 && o.SignatureVersion != 2:
		return nil, fmt.Errorf("--signature-version must be 1 or 2, got %d", o.SignatureVersion)
	case o.PageSize < 1 || o.PageSize > MaxPageSize:
		return nil, fmt.Errorf("--page-size must be 1..%d, got %d", MaxPageSize, o.PageSize)
	case o.Timeout < 0:
		return nil, fmt.Errorf("--timeout must not be negative")
	case o.MaxPages < 1:
		return nil, fmt.Errorf("--max-pages must be at least 1, got %d", o.MaxPages)
	}
	for _, s := range o.Statuses {
		if !s.Valid() {
			return nil, fmt.Errorf("--status: %q is not one of PENDING, PROCESSING, ERROR, DONE", s)
		}
	}
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// Counts is what a run did with the tasks of one status's pages.
type Counts struct {
	Fetched, Imported, Unchanged, Conflict, Invalid, Skipped int
}

func (c *Counts) add(o Counts) {
	c.Fetched += o.Fetched
	c.Imported += o.Imported
	c.Unchanged += o.Unchanged
	c.Conflict += o.Conflict
	c.Invalid += o.Invalid
	c.Skipped += o.Skipped
}

// Summary is a run's outcome, by the status asked for.
type Summary struct {
	Source   string
	DryRun   bool
	Statuses []contracts.Status
	ByStatus map[contracts.Status]*Counts
	Pages    int
	// Uncertain is the size of the batch whose import was in flight when
	// the store stopped answering (a Redis timeout): up to that many more
	// tasks may have been imported than Imported says.
	Uncertain int
}

// Total adds up every status.
func (s *Summary) Total() Counts {
	var c Counts
	for _, st := range s.Statuses {
		c.add(*s.ByStatus[st])
	}
	return c
}

// Write prints the summary table.
func (s *Summary) Write(w io.Writer) {
	title := "import-queue summary: " + s.Source
	if s.DryRun {
		title += " (dry run: nothing was written; IMPORTED counts what would be)"
	}
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tFETCHED\tIMPORTED\tUNCHANGED\tCONFLICT\tINVALID\tSKIPPED")
	row := func(name string, c Counts) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", name, c.Fetched, c.Imported, c.Unchanged, c.Conflict, c.Invalid, c.Skipped)
	}
	asked := map[contracts.Status]bool{}
	for _, st := range s.Statuses {
		asked[st] = true
		row(string(st), *s.ByStatus[st])
	}
	for _, st := range []contracts.Status{contracts.StatusPending, contracts.StatusProcessing, contracts.StatusError, contracts.StatusDone} {
		if !asked[st] {
			hint := "--status"
			if st == contracts.StatusDone {
				hint = "--include-done"
			}
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\tnot requested (%s)\n", st, hint)
		}
	}
	row("TOTAL", s.Total())
	_ = tw.Flush()
	if s.Uncertain > 0 {
		fmt.Fprintf(w, "imported: %d certainly, up to %d in all: the store did not answer for a batch of %d (it may have written them); run again: those written are reported unchanged\n",
			s.Total().Imported, s.Total().Imported+s.Uncertain, s.Uncertain)
	}
}

// StopError is a run that stopped before the end: a page could not be
// fetched or the ledger could not be written. What came before is
// imported; running the same import again resumes.
type StopError struct {
	Status   contracts.Status
	Page     int
	Imported int // tasks imported before the stop, this run
	// Uncertain is the batch in flight when the store stopped answering:
	// up to that many more may have been imported.
	Uncertain int
	DryRun    bool
	Err       error
}

func (e *StopError) Error() string {
	if e.DryRun {
		return fmt.Sprintf("stopped at page %d of status %s: %v (dry run: nothing was written)", e.Page, e.Status, e.Err)
	}
	imported := fmt.Sprintf("%d tasks were imported before it", e.Imported)
	if e.Uncertain > 0 {
		imported = fmt.Sprintf("up to %d tasks were imported before it (%d certainly; the store did not answer for a batch of %d, which it may have written)",
			e.Imported+e.Uncertain, e.Imported, e.Uncertain)
	}
	return fmt.Sprintf("stopped at page %d of status %s: %v; %s; run the same command again to resume (tasks already imported are reported unchanged)",
		e.Page, e.Status, e.Err, imported)
}

func (e *StopError) Unwrap() error { return e.Err }

// Run imports the old API's tasks into l, page by page and status by
// status, writing one line per task to out. It returns the summary (also
// after a stop, covering what was done) and a *StopError when it stopped
// early; conflicts and invalid tasks are counted, not errors.
func Run(ctx context.Context, l *tasks.Ledger, opt Options, out io.Writer) (*Summary, error) {
	opt = opt.withDefaults()
	base, err := opt.validate()
	if err != nil {
		return nil, err
	}
	src := newSource(base, opt.Secret, opt.SignatureVersion, opt.HTTPClient, opt.Now, opt.Sleep)
	name := base.Redacted()
	sum := &Summary{Source: name, DryRun: opt.DryRun, Statuses: opt.Statuses, ByStatus: map[contracts.Status]*Counts{}}
	for _, st := range opt.Statuses {
		sum.ByStatus[st] = &Counts{}
	}
	selected := map[contracts.Status]bool{}
	for _, st := range opt.Statuses {
		selected[st] = true
	}
	im := l.NewImporter(name, opt.DryRun)
	if opt.DryRun {
		fmt.Fprintf(out, "dry run: nothing is written to the ledger\n")
	}
	for _, st := range opt.Statuses {
		w := walker{src: src, im: im, limit: opt.PageSize, maxPages: opt.MaxPages, selected: selected, sum: sum, out: out}
		page, err := w.status(ctx, st)
		if err != nil {
			return sum, &StopError{Status: st, Page: page, Imported: sum.Total().Imported, Uncertain: sum.Uncertain, DryRun: opt.DryRun, Err: err}
		}
	}
	return sum, nil
}

// walker pages the statuses of one run.
type walker struct {
	src      *source
	im       *tasks.Importer
	limit    int
	maxPages int
	selected map[contracts.Status]bool
	sum      *Summary
	out      io.Writer
}

// status imports every page of status st. On failure it returns the page
// (from 1) that failed. It stops with an error when the API loops: a
// next_cursor it answered before (a→b→a), a page (by cursor) that brings
// no queue_id the status's earlier pages did not (fresh cursors over the
// same tasks), a page by offset that repeats the last; and after maxPages
// pages in all.
func (w *walker) status(ctx context.Context, st contracts.Status) (int, error) {
	cursor, offset, seen := "", 0, map[string]bool{}
	cursors := map[string]int{} // next_cursor → the page that answered it
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if w.sum.Pages >= w.maxPages {
			return n, fmt.Errorf("stopped after %d pages (--max-pages): the old API kept answering next pages; raise --max-pages if its queue is really that long", w.sum.Pages)
		}
		p, err := w.src.fetch(ctx, st, w.limit, cursor, offset)
		if err != nil {
			return n, err
		}
		w.sum.Pages++
		fresh, err := importPage(ctx, w.im, p, w.selected, w.sum, w.sum.ByStatus[st], seen, w.out)
		switch {
		case err != nil:
			return n, err
		case !p.more:
			return 0, nil
		case p.byIndex && !fresh:
			return n + 1, fmt.Errorf("the API answered a full page without next_cursor but the next page by offset repeats it: it pages neither by cursor nor by offset")
		case p.byIndex:
			offset += len(p.tasks)
		case cursors[p.next] > 0:
			return n + 1, fmt.Errorf("the API answered next_cursor %q on page %d and again on page %d: a cursor loop; nothing new would come", p.next, cursors[p.next], n)
		case p.next == cursor:
			return n + 1, fmt.Errorf("the API answered next_cursor %q on page %d and again on page %d: a cursor loop; nothing new would come", p.next, n-1, n)
		case !fresh:
			return n + 1, fmt.Errorf("page %d (after next_cursor %q) brought no queue_id that the earlier pages of %s did not: the API is looping over the same tasks", n, cursor, st)
		default:
			cursors[p.next] = n
			cursor = p.next
		}
	}
}

// importPage imports one page's tasks and reports each. fresh tells
// whether the page held a queue_id not seen on this status's earlier pages.
//
// Tasks go to the ledger in batches of tasks.MaxImportBatch, each atomic:
// when one fails, the batches before it are counted, the tasks of the
// failed one are not, and (writing, not a dry run) their number is added
// to sum.Uncertain: the store may have written them before its answer
// was lost.
func importPage(ctx context.Context, im *tasks.Importer, p page, selected map[contracts.Status]bool, sum *Summary, counts *Counts,
	seen map[string]bool, out io.Writer) (fresh bool, err error) {
	results := make([]tasks.ImportResult, len(p.tasks))
	decided := make([]bool, len(p.tasks))
	defer func() { report(results, decided, counts, im.DryRun(), out) }()
	var items []tasks.ImportTask
	var at []int
	for i, raw := range p.tasks {
		t, derr := decodeTask(raw)
		key := strings.ToLower(strings.TrimSpace(t.QueueID))
		if !seen[key] {
			seen[key], fresh = true, true
		}
		switch {
		case derr != nil:
			results[i], decided[i] = tasks.ImportResult{QueueID: t.QueueID, From: t.Status, Outcome: tasks.ImportInvalid, Reason: derr.Error()}, true
		case t.Status.Valid() && !selected[t.Status]:
			results[i], decided[i] = tasks.ImportResult{QueueID: t.QueueID, From: t.Status, Outcome: outcomeSkipped}, true
		default:
			items, at = append(items, t), append(at, i)
		}
	}
	for len(items) > 0 {
		n := min(len(items), tasks.MaxImportBatch)
		res, err := im.Import(ctx, items[:n])
		if err != nil {
			if !im.DryRun() {
				sum.Uncertain += n
			}
			return fresh, err
		}
		for j, r := range res {
			results[at[j]], decided[at[j]] = r, true
		}
		items, at = items[n:], at[n:]
	}
	return fresh, nil
}

// report counts and prints the tasks of a page that were decided, in page
// order.
func report(results []tasks.ImportResult, decided []bool, counts *Counts, dry bool, out io.Writer) {
	for i, r := range results {
		if !decided[i] {
			continue
		}
		counts.Fetched++
		switch r.Outcome {
		case tasks.ImportImported:
			counts.Imported++
		case tasks.ImportUnchanged:
			counts.Unchanged++
		case tasks.ImportConflict:
			counts.Conflict++
		case tasks.ImportInvalid:
			counts.Invalid++
		case outcomeSkipped:
			counts.Skipped++
		}
		fmt.Fprintln(out, line(r, dry))
	}
}

// outcomeSkipped: a task of a status not selected (the API ignored the
// status filter).
const outcomeSkipped tasks.ImportOutcome = "skipped"

// line is a task's report line: action, queue_id, status at the source,
// what became of it.
func line(r tasks.ImportResult, dry bool) string {
	action := string(r.Outcome)
	if dry && r.Outcome == tasks.ImportImported {
		action = "would-import"
	}
	id := r.QueueID
	if id == "" {
		id = "(no queue_id)"
	}
	from := string(r.From)
	if from == "" {
		from = "?"
	}
	var detail string
	switch r.Outcome {
	case tasks.ImportImported:
		detail = fmt.Sprintf("-> %s %s", r.Status, r.Priority)
		if r.Status != contracts.StatusPending {
			detail = "-> " + string(r.Status)
		}
		if r.DLQ {
			detail += " (dead letter)"
		}
		if r.Reason != "" {
			detail += "; " + r.Reason
		}
	case tasks.ImportUnchanged:
		detail = "imported before (now " + string(r.Status) + ")"
	case tasks.ImportConflict:
		detail = r.Reason
		if r.Status != "" && r.OpenQueueID == "" {
			detail += " (ledger: " + string(r.Status) + ")"
		}
	case tasks.ImportInvalid:
		detail = r.Reason
	case outcomeSkipped:
		detail = "status " + from + " not selected"
	}
	return fmt.Sprintf("%-12s %-36s %-10s %s", action, id, from, detail)
}
