package taskimport

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/orchestrator/tasks"
)

// Exit codes of Main.
const (
	ExitOK        = 0 // every task fetched is imported, unchanged or skipped by status
	ExitStopped   = 1 // stopped early (a page or the ledger failed); what came before is imported
	ExitUsage     = 2 // bad flags or configuration; nothing was done
	ExitConflicts = 3 // finished, but some tasks are conflicts or invalid (listed), not imported
)

// ConfigError is an error of an Opener that is the configuration's (exit
// 2), not the store's (exit 1).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Opener connects the ledger to import into and returns it with a func
// that closes the connection. The binary's opener reads flowgate's own
// Redis configuration.
type Opener func(ctx context.Context) (*tasks.Ledger, func(), error)

// Main runs `flowgate import-queue [flags]` and returns its exit code.
// Flags are read before open is called, so -help needs no configuration.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, open Opener) int {
	opt, code, ok := parseFlags(args, getenv, stdout, stderr)
	if !ok {
		return code
	}
	if _, err := opt.withDefaults().validate(); err != nil {
		fmt.Fprintf(stderr, "flowgate import-queue: %v\n", err)
		return ExitUsage
	}
	l, closeFn, err := open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "flowgate import-queue: %v\n", err)
		if ce := (*ConfigError)(nil); errors.As(err, &ce) {
			return ExitUsage
		}
		return ExitStopped
	}
	defer closeFn()
	sum, err := Run(ctx, l, opt, stdout)
	if sum != nil {
		fmt.Fprintln(stdout)
		sum.Write(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "flowgate import-queue: %v\n", err)
		if sum == nil {
			return ExitUsage
		}
		return ExitStopped
	}
	if t := sum.Total(); t.Conflict+t.Invalid > 0 {
		fmt.Fprintf(stderr, "flowgate import-queue: %d conflicts and %d invalid tasks were not imported (listed above); fix them at the source or in the ledger and run again\n",
			t.Conflict, t.Invalid)
		return ExitConflicts
	}
	return ExitOK
}

func parseFlags(args []string, getenv func(string) string, stdout, stderr io.Writer) (Options, int, bool) {
	var opt Options
	fs := flag.NewFlagSet("flowgate import-queue", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opt.From, "from", "", "base URL of the old queue API (its GET /queue is read); required")
	secret := fs.String("secret", "", "HMAC secret of the old API (default $IMPORT_HMAC_SECRET, else $HMAC_SECRET; prefer the environment: a flag shows in ps)")
	statuses := fs.String("status", "PENDING,PROCESSING,ERROR", "comma-separated statuses to import, in that order")
	includeDone := fs.Bool("include-done", false, "import DONE tasks too (added to --status)")
	fs.IntVar(&opt.PageSize, "page-size", DefaultPageSize, fmt.Sprintf("tasks per GET /queue page (1..%d)", MaxPageSize))
	fs.BoolVar(&opt.DryRun, "dry-run", false, "print what would be done; write nothing")
	fs.IntVar(&opt.SignatureVersion, "signature-version", 1, "HMAC signature version: 1 (the seed's: timestamp.body; at most one request per second) or 2 (method and path signed too)")
	fs.DurationVar(&opt.Timeout, "timeout", DefaultTimeout, "time limit of each request")
	fs.IntVar(&opt.MaxPages, "max-pages", DefaultMaxPages, "stop after this many pages, all statuses together (a guard against an API that pages forever)")
	fs.Usage = func() { usage(stdout, fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return opt, ExitOK, false
		}
		return opt, ExitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flowgate import-queue: unexpected argument %q\n", fs.Arg(0))
		return opt, ExitUsage, false
	}
	if opt.PageSize < 1 || opt.Timeout <= 0 || opt.MaxPages < 1 {
		fmt.Fprintf(stderr, "flowgate import-queue: --page-size must be 1..%d, --timeout positive and --max-pages at least 1\n", MaxPageSize)
		return opt, ExitUsage, false
	}
	switch {
	case *secret != "":
		opt.Secret = []byte(*secret)
	case getenv("IMPORT_HMAC_SECRET") != "":
		opt.Secret = []byte(getenv("IMPORT_HMAC_SECRET"))
	default:
		opt.Secret = []byte(getenv("HMAC_SECRET"))
	}
	seen := map[contracts.Status]bool{}
	for _, s := range strings.Split(*statuses, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		st, err := contracts.ParseStatus(s)
		if err != nil {
			fmt.Fprintf(stderr, "flowgate import-queue: --status: %v\n", err)
			return opt, ExitUsage, false
		}
		if !seen[st] {
			seen[st] = true
			opt.Statuses = append(opt.Statuses, st)
		}
	}
	if *includeDone && !seen[contracts.StatusDone] {
		opt.Statuses = append(opt.Statuses, contracts.StatusDone)
	}
	if len(opt.Statuses) == 0 {
		fmt.Fprintln(stderr, "flowgate import-queue: --status names no status")
		return opt, ExitUsage, false
	}
	return opt, 0, true
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, `Usage: flowgate import-queue --from URL [flags]

Imports the old queue API's tasks (GET URL/queue, HMAC-signed, paged by
status) into flowgate's task ledger, in the Redis that flowgate's own
environment names (REDIS_URL, REDIS_CLUSTER_ADDRS or REDIS_SENTINEL_ADDRS,
with the rest of its configuration). Idempotent by queue_id: run it again
to resume or to check; what was imported is reported unchanged, and a task
whose content differs is reported as a conflict, never overwritten.

Exit codes: 0 done; 1 stopped early (what came before is imported; run
again); 2 bad flags or configuration; 3 done, but conflicts or invalid
tasks were not imported.

Flags:`)
	fs.SetOutput(w)
	fs.PrintDefaults()
}
