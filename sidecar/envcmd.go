package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// envRequired are the variables a real deployment sets: Redis and the
// secrets LoadConfig demands with it. `flowgate env` writes them active,
// the secrets freshly generated; every other variable is written commented
// out with its default.
var envRequired = []struct {
	name  string
	value func() (string, error)
}{
	{"REDIS_URL", func() (string, error) { return "redis://127.0.0.1:6379/0", nil }},
	{"BOOKING_AUTH_SECRET", func() (string, error) { return randomHex(32) }},
	{"HMAC_SECRET", func() (string, error) { return randomHex(32) }},
	// Not required until something is sent signed (BUFFER_WEBHOOK_URL,
	// DLQ_ALERT_WEBHOOK, BOOKING_EVENTS_WEBHOOK, a handler with sign:
	// true), but generated apart from HMAC_SECRET so that it is there,
	// and different, when one is set.
	{"OUTBOUND_HMAC_SECRET", func() (string, error) { return randomHex(32) }},
	{"BUFFER_API_TOKEN", func() (string, error) { return randomHex(32) }},
	{"MONITORING_USER", func() (string, error) { return "ops", nil }},
	{"MONITORING_PASSWORD", func() (string, error) { return randomHex(16) }},
}

// envFileMode is the mode of the file `flowgate env PATH` writes: it holds
// the secrets.
const envFileMode = 0o600

// runEnv is `flowgate env [-force] [PATH]`: the .env on stdout, or into
// PATH, created with mode 0600 and never overwritten unless -force (then
// replaced whole, mode 0600 again).
func runEnv(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flowgate env", flag.ContinueOnError)
	fs.SetOutput(stderr)
	force := fs.Bool("force", false, "replace PATH when it exists")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: flowgate env [-force] [PATH]")
		fmt.Fprintln(stderr, "  writes a complete .env for a real deployment, with fresh secrets: to PATH (a new file, mode 0600)")
		fmt.Fprintln(stderr, "  or, without PATH, to stdout (then create the file private yourself: umask 077).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	if fs.NArg() == 0 {
		warnPublicStdout(stdout, stderr)
		if err := writeEnv(stdout, getenv, time.Now()); err != nil {
			fmt.Fprintf(stderr, "flowgate env: %v\n", err)
			return 1
		}
		return 0
	}
	path := fs.Arg(0)
	if err := writeEnvFile(path, *force, getenv, time.Now()); err != nil {
		fmt.Fprintf(stderr, "flowgate env: %v\n", err)
		if errors.Is(err, os.ErrExist) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stderr, "flowgate env: wrote %s (mode 0600)\n", path)
	return 0
}

// warnPublicStdout warns when stdout is a file that others may read (a
// `flowgate env > .env` under the usual umask 022).
func warnPublicStdout(stdout, stderr io.Writer) {
	f, ok := stdout.(*os.File)
	if !ok {
		return
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o077 == 0 {
		return
	}
	fmt.Fprintf(stderr, "flowgate env: WARNING: stdout is a file of mode %#o that others may read, and it will hold secrets: chmod 600 it, or write it with  flowgate env PATH\n", st.Mode().Perm())
}

// writeEnvFile writes the .env into path with mode 0600: a new file, or
// with force a replacement (written aside, then renamed over path, so that
// nobody ever reads a half-written or wider file).
func writeEnvFile(path string, force bool, getenv func(string) string, now time.Time) error {
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, envFileMode)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("%s exists: not overwritten (it may hold the only copy of the secrets); -force replaces it: %w", path, os.ErrExist)
			}
			return err
		}
		if err := finishEnvFile(f, getenv, now); err != nil {
			_ = os.Remove(path)
			return err
		}
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	if err := finishEnvFile(f, getenv, now); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}

// finishEnvFile makes f 0600 (whatever the umask), writes the .env into
// it, syncs and closes it.
func finishEnvFile(f *os.File, getenv func(string) string, now time.Time) error {
	err := f.Chmod(envFileMode)
	if err == nil {
		err = writeEnv(f, getenv, now)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeEnv writes a complete, commented .env for a real deployment. Every
// setting set in the environment (getenv) is written active with its
// value, so `REDIS_URL=redis://redis:6379/0 flowgate env` fits a compose
// file and a Sentinel or Cluster deployment keeps its addresses, master
// and password; the required ones not set are generated (REDIS_URL's
// local default only where no Sentinel or Cluster is set: one Redis mode
// at a time). The Cloud9 choice (CLOUD9_* credentials, or
// CLOUD9_SIMULATOR) cannot be generated: it is active only when set in the
// environment, and otherwise the file's head says to make it.
func writeEnv(w io.Writer, getenv func(string) string, now time.Time) error {
	active := map[string]string{}
	for _, g := range settingGroups {
		for _, s := range g.list {
			if v := getenv(s.name); v != "" {
				active[s.name] = v
			}
		}
	}
	otherRedis := active["REDIS_SENTINEL_ADDRS"] != "" || active["REDIS_CLUSTER_ADDRS"] != ""
	for _, r := range envRequired {
		if r.name == "REDIS_URL" && otherRedis {
			continue
		}
		v := getenv(r.name)
		if v == "" {
			var err error
			if v, err = r.value(); err != nil {
				return fmt.Errorf("generate %s: %w", r.name, err)
			}
		}
		active[r.name] = v
	}
	fmt.Fprintf(w, "# flowgate configuration for a real deployment, written by `flowgate env` on %s.\n", now.UTC().Format(time.RFC3339))
	fmt.Fprintln(w, "# Keep it secret (it holds the secrets): mode 0600, never in git or an image (.gitignore and")
	fmt.Fprintln(w, "# .dockerignore list .env). Load it into a shell with  set -a; . ./.env; set +a")
	fmt.Fprintln(w, "# or keep it beside docker-compose.yml (compose passes the variables that file lists). Then run  flowgate check.")
	fmt.Fprintln(w, "# Active lines are what a real deployment needs; commented lines show each default.")
	if active["CLOUD9_ENDPOINT"] == "" && active["CLOUD9_SIMULATOR"] == "" {
		fmt.Fprintln(w, "#")
		fmt.Fprintln(w, "# CHOOSE YOUR CLOUD9 before the first start: flowgate refuses a real Redis without it.")
		fmt.Fprintln(w, "# Either uncomment and fill in CLOUD9_ENDPOINT, CLOUD9_CLIENT_ID, CLOUD9_USERNAME,")
		fmt.Fprintln(w, "# CLOUD9_PASSWORD, CLOUD9_VENDOR_USERNAME and CLOUD9_PROVIDER_GUID (the real Cloud9),")
		fmt.Fprintln(w, "# or set  CLOUD9_SIMULATOR=true  (the built-in sandbox simulator: its appointments are not real).")
	}
	for _, g := range settingGroups {
		fmt.Fprintf(w, "\n## %s\n", g.title)
		for _, s := range g.list {
			fmt.Fprintf(w, "# %s\n", s.help)
			if v, ok := active[s.name]; ok {
				fmt.Fprintf(w, "%s=%s\n", s.name, shellQuote(v))
				continue
			}
			fmt.Fprintf(w, "# %s=%s\n", s.name, shellQuote(s.def))
		}
	}
	return nil
}

// shellQuote quotes v for a POSIX shell and docker compose's env_file when
// it holds anything but plain characters.
func shellQuote(v string) string {
	if v == "" || strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@,%+=") == "" {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
