package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/configuration.md is ConfigDoc's output, byte for byte, and every
// variable -help prints is in it with the same default and help.
func TestConfigurationDocIsCurrent(t *testing.T) {
	var want bytes.Buffer
	ConfigDoc(&want)
	path := filepath.Join("..", "docs", "configuration.md")
	if os.Getenv("FLOWGATE_UPDATE_DOCS") == "1" {
		require.NoError(t, os.WriteFile(path, want.Bytes(), 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "regenerate with FLOWGATE_UPDATE_DOCS=1 go test -run TestConfigurationDocIsCurrent ./sidecar/")
	require.Equal(t, want.String(), string(got),
		"docs/configuration.md is stale: FLOWGATE_UPDATE_DOCS=1 go test -run TestConfigurationDocIsCurrent ./sidecar/")

	var help bytes.Buffer
	Usage(&help)
	for _, s := range settings {
		def := s.def
		if def == "" {
			def = "(unset)"
		}
		line := ""
		for _, l := range strings.Split(help.String(), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == s.name {
				line = l
			}
		}
		require.NotEmpty(t, line, "-help lists %s", s.name)
		require.Contains(t, line, def, s.name)
		require.Contains(t, line, s.help, s.name)
		require.Contains(t, string(got), "`"+s.name+"`", s.name)
	}
}
