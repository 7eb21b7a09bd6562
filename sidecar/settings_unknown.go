package main

import (
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
)

// unknownSetting is a variable in the environment that looks like one of
// flowgate's (its first word is one of theirs: CLOUD9_, MONITORING_, …)
// but is none of them: a typo such as MONITORING_READ_ONLY for
// MONITORING_READONLY would otherwise be ignored silently, leaving the
// setting at its default.
type unknownSetting struct {
	name  string
	meant string // the closest setting, "" when none is close
}

// notSettings are variables with a settings word that are not meant for
// flowgate: the HTTP proxy conventions, the import command's secret. (The
// tests' and tools' FLOWGATE_* variables are skipped unless one is close
// to FLOWGATE_ADDR.)
var notSettings = []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "IMPORT_HMAC_SECRET"}

// serviceLink matches the variables Kubernetes (and Docker links) put in
// every container for a service: REDIS_SERVICE_HOST, REDIS_PORT_6379_TCP…
var serviceLink = regexp.MustCompile(`^[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_ADDR|_PORT|_PROTO)?)?)$`)

// unknownInEnv are the names that share a first word with a setting and
// are neither a setting nor a retired one (retiredInEnv reports those).
func unknownInEnv(names []string) []unknownSetting {
	known := map[string]bool{}
	words := map[string]bool{}
	for _, s := range settings {
		known[s.name] = true
		w, _, _ := strings.Cut(s.name, "_")
		words[w] = true
	}
	for _, r := range retiredSettings {
		known[r.name] = true
	}
	var out []unknownSetting
	for _, n := range names {
		w, _, found := strings.Cut(n, "_")
		if !found || known[n] || !words[w] || slices.Contains(notSettings, n) || serviceLink.MatchString(n) {
			continue
		}
		meant := closestSetting(n)
		if w == "FLOWGATE" && meant == "" {
			continue
		}
		out = append(out, unknownSetting{name: n, meant: meant})
	}
	return out
}

// closestSetting is the setting nearest to name (edit distance at most 2,
// 3 for a name of 20 characters or more), "" when none is.
func closestSetting(name string) string {
	best, bestD := "", 3
	if len(name) >= 20 {
		bestD = 4
	}
	for _, s := range settings {
		if d := editDistance(name, s.name); d < bestD {
			best, bestD = s.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (ASCII names).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// environNames are the names of the process's environment variables.
func environNames() []string {
	var out []string
	for _, kv := range os.Environ() {
		if n, _, ok := strings.Cut(kv, "="); ok && n != "" {
			out = append(out, n)
		}
	}
	return out
}

// unknownHint is the advice for an unknown variable.
func (u unknownSetting) hint() string {
	if u.meant != "" {
		return "not a flowgate setting (it changes nothing): did you mean " + u.meant + "?"
	}
	return "not a flowgate setting (it changes nothing); `flowgate help` lists them"
}

// warnUnknown logs one warning per unknown variable of the environment.
func warnUnknown(log *slog.Logger, names []string) {
	for _, u := range unknownInEnv(names) {
		log.Warn("unknown setting in the environment", "setting", u.name, "hint", u.hint())
	}
}
