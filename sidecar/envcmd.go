package main

import (
	"fmt"
	"io"
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
	{"BUFFER_API_TOKEN", func() (string, error) { return randomHex(32) }},
	{"MONITORING_USER", func() (string, error) { return "ops", nil }},
	{"MONITORING_PASSWORD", func() (string, error) { return randomHex(16) }},
}

// writeEnv writes a complete, commented .env for a real deployment. A
// required variable already set in the environment (getenv) keeps its
// value, so `REDIS_URL=redis://redis:6379/0 flowgate env` fits a compose
// file; the rest are generated.
func writeEnv(w io.Writer, getenv func(string) string, now time.Time) error {
	active := map[string]string{}
	for _, r := range envRequired {
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
	fmt.Fprintln(w, "# Keep it secret (it holds the secrets). Load it into a shell with  set -a; . ./.env; set +a")
	fmt.Fprintln(w, "# or give it to docker compose as env_file. Then run  flowgate check  before sending traffic.")
	fmt.Fprintln(w, "# Active lines are what a real deployment needs; commented lines show each default.")
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
