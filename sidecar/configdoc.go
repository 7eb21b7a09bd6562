package main

import (
	"fmt"
	"io"
	"strings"
)

// ConfigDoc writes docs/configuration.md from the settings table, the one
// source of `flowgate -help` too (TestConfigurationDocIsCurrent fails when
// the file differs; FLOWGATE_UPDATE_DOCS=1 rewrites it).
func ConfigDoc(w io.Writer) {
	fmt.Fprint(w, `# Configuration

flowgate reads its whole configuration from the environment. This page is
generated from the settings table in `+"`sidecar/settings*.go`"+`, the same table
`+"`flowgate -help`"+` prints; do not edit it by hand (regenerate:
`+"`FLOWGATE_UPDATE_DOCS=1 go test -run TestConfigurationDocIsCurrent ./sidecar/`"+`).

A default shown as *(unset)* means the variable is off or required; secrets
are marked 🔒 and never logged. Without `+"`REDIS_URL`"+` (or a cluster or
sentinel) flowgate runs on an embedded, non-durable Redis, generates the
secrets it needs and books into the built-in Cloud9 sandbox simulator. With
a real Redis it refuses to start (exit 2) until you choose: the four
`+"`CLOUD9_*`"+` credentials for the real Cloud9, or `+"`CLOUD9_SIMULATOR=true`"+` for
the simulator on purpose.

`+"`flowgate env .env`"+` writes every variable below into a new file of mode 0600,
with fresh secrets; keep it out of git and images (`+"`.gitignore`"+` and
`+"`.dockerignore`"+` list `+"`.env`"+`).

## Commands

`+"`flowgate`"+` alone starts the server; `+"`flowgate help`"+` (or `+"`-help`"+`) prints the
commands and this table and starts nothing.

| command | what it does |
|---|---|
`)
	for _, c := range commands {
		fmt.Fprintf(w, "| `flowgate %s` | %s |\n", c.usage, strings.ReplaceAll(c.help, "|", `\|`))
	}
	for _, g := range settingGroups {
		fmt.Fprintf(w, "\n## %s\n\n| variable | default | meaning |\n|---|---|---|\n", g.title)
		for _, s := range g.list {
			def := "*(unset)*"
			if s.def != "" {
				def = "`" + s.def + "`"
			}
			name := "`" + s.name + "`"
			if s.secret {
				name += " 🔒"
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", name, def, strings.ReplaceAll(s.help, "|", `\|`))
		}
	}
}
