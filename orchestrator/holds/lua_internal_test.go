package holds

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/luafiles"
)

// Every top-level local of the prelude is used by a script or by the
// prelude itself: luacheck sees them as read-only globals of the scripts
// (.luacheckrc), so it cannot tell. Every file of lua/ is a script of
// holdLua and each is there (loadLua; luafiles tests the refusals).
func TestPreludeDefinesNothingUnused(t *testing.T) {
	_, err := loadLua(luaFiles)
	require.NoError(t, err)
	paths, err := fs.Glob(luaFiles, "lua/*.lua")
	require.NoError(t, err)
	var prelude string
	var scripts []string
	for _, p := range paths {
		b, err := luaFiles.ReadFile(p)
		require.NoError(t, err)
		if p == "lua/prelude.lua" {
			prelude = string(b)
		} else {
			scripts = append(scripts, string(b))
		}
	}
	require.NotEmpty(t, prelude)
	require.Empty(t, luafiles.UnusedLocals(prelude, scripts...))
}
