// Command flowgate is the sidecar binary: configuration comes from the
// environment (flowgate -help lists it), Redis is real or embedded, and
// SIGINT/SIGTERM stop it gracefully. `flowgate cloud9-sim [flags]` runs the
// Cloud9 sandbox simulator alone, for other tools to point at;
// `flowgate import-queue --from URL` imports the old queue API's tasks.
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
		switch args[0] {
		case "cloud9-sim": // the Cloud9 sandbox simulator on its own
			return cloud9sim.Main(args[1:], stdout, stderr)
		case "env": // a complete .env for a real deployment, to stdout or a 0600 file
			return runEnv(args[1:], getenv, stdout, stderr)
		case "check": // is this configuration ready for traffic?
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runCheck(ctx, getenv, stdout, stderr)
		}
	}
	if len(args) > 0 && args[0] == "import-queue" { // the old queue API's tasks into the ledger
		return runImportQueue(args[1:], getenv, stdout, stderr)
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
	cfg, err := LoadConfig(getenv)
	if err != nil {
		reportConfig(stderr, err)
		return 2
	}
	log := newLogger(cfg, stderr)
	routeLibraryLogs(log)
	logConfig(log, cfg, getenv)

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
