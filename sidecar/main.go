// Command flowgate is the sidecar binary: configuration comes from the
// environment (flowgate -help lists it), Redis is real or embedded, and
// SIGINT/SIGTERM stop it gracefully. `flowgate cloud9-sim [flags]` runs the
// Cloud9 sandbox simulator alone, for other tools to point at;
// `flowgate import-queue --from URL` imports the old queue API's tasks;
// `flowgate help` lists every command (the table commands).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is main without os.Exit, for tests. Exit codes: 0 clean stop, 1
// runtime failure, 2 bad usage or configuration.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "help" { // like -help: never starts the server
			Usage(stdout)
			return 0
		}
		for _, c := range commands {
			if c.name == args[0] && c.run != nil {
				return c.run(args[1:], getenv, stdout, stderr)
			}
		}
	}
	fs := flag.NewFlagSet("flowgate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { Usage(stdout) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 { // a mistyped command must not start the server against the configured Redis
		fmt.Fprintf(stderr, "flowgate: unknown command %q; `flowgate help` lists the commands (nothing started)\n", fs.Arg(0))
		return 2
	}
	cfg, err := LoadConfig(getenv)
	if err != nil {
		reportConfig(stderr, err)
		return 2
	}
	log := newLogger(cfg, stderr)
	routeLibraryLogs(log)
	logConfig(log, cfg, getenv)
	warnRetired(log, getenv)
	warnUnknown(log, environNames())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	m := NewMain(cfg, log)
	if err := m.Run(ctx); err != nil {
		log.Error("flowgate failed to start", "err", err)
		_ = m.Close()
		if ce := (*ConfigError)(nil); errors.As(err, &ce) {
			return 2
		}
		return 1
	}
	code := 0
	select {
	case <-ctx.Done():
		log.Info("shutdown signal received")
	case err := <-m.Err():
		log.Error("http server stopped", "err", err)
		code = 1
	}
	stop()
	if err := m.Close(); err != nil {
		log.Error("shutdown", "err", err)
		code = 1
	}
	return code
}

// command is one subcommand of the binary: -help lists the table, run
// dispatches on it.
type command struct {
	name, usage, help string
	run               func(args []string, getenv func(string) string, stdout, stderr io.Writer) int
}

// commands is every subcommand, in the order -help lists them; help is
// run's own (it prints Usage, which lists this table).
var commands = []command{
	{name: "help", usage: "help", help: "this text (as -help); starts nothing"},
	{name: "version", usage: "version", help: "the build: module version, Go version, VCS revision and time",
		run: func(_ []string, _ func(string) string, stdout, _ io.Writer) int { return runVersion(stdout) }},
	{name: "env", usage: "env [-force] [PATH]", help: "a complete .env with fresh secrets (PATH: a new file, mode 0600)", run: runEnv},
	{name: "check", usage: "check", help: "is this configuration ready for traffic? one table, exit 1 on any FAIL",
		run: func(_ []string, getenv func(string) string, stdout, stderr io.Writer) int {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runCheck(ctx, getenv, stdout, stderr)
		}},
	{name: "import-queue", usage: "import-queue -help", help: "the old queue API's tasks into the ledger (secret: IMPORT_HMAC_SECRET, else HMAC_SECRET; docs/import-queue.md)", run: runImportQueue},
	{name: "cloud9-sim", usage: "cloud9-sim -help", help: "the Cloud9 sandbox simulator on its own, for other tools to point at",
		run: func(args []string, _ func(string) string, stdout, stderr io.Writer) int {
			return cloud9sim.Main(args, stdout, stderr)
		}},
}

// runVersion is `flowgate version`: what runtime/debug knows of the build.
func runVersion(w io.Writer) int {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(w, "flowgate (no build information: built without module support)")
		return 0
	}
	fmt.Fprintf(w, "flowgate %s\n", bi.Main.Version)
	fmt.Fprintf(w, "  go       %s %s/%s\n", bi.GoVersion, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "  module   %s\n", bi.Main.Path)
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if rev := vcs["vcs.revision"]; rev != "" {
		dirty := ""
		if vcs["vcs.modified"] == "true" {
			dirty = " (modified)"
		}
		fmt.Fprintf(w, "  revision %s%s\n  time     %s\n", rev, dirty, vcs["vcs.time"])
	} else {
		fmt.Fprintln(w, "  revision unknown (built outside a git checkout, or with -buildvcs=false)")
	}
	return 0
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// logConfig logs the effective settings once, secrets redacted.
func logConfig(log *slog.Logger, cfg Config, getenv func(string) string) {
	attrs := make([]any, 0, 2*len(settings))
	for _, s := range settings {
		v := getenv(s.name)
		switch {
		case v == "":
			v = s.def
		case s.secret:
			v = "(set)"
		}
		if v != "" {
			attrs = append(attrs, s.name, v)
		}
	}
	log.Info("configuration", attrs...)
}

// reportConfig writes every configuration problem on a line of its own.
func reportConfig(w io.Writer, err error) {
	var es ConfigErrors
	if !errors.As(err, &es) || len(es) == 1 {
		fmt.Fprintf(w, "flowgate: invalid configuration: %v\n", err)
		return
	}
	fmt.Fprintf(w, "flowgate: invalid configuration (%d problems; `flowgate -help` lists every variable, `flowgate env` prints a complete .env):\n", len(es))
	for _, e := range es {
		fmt.Fprintf(w, "  %s\n", e)
	}
}
