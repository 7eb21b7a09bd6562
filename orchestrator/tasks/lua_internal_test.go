package tasks

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/luafiles"
)

// Every top-level local of the prelude is used, by a script or by the
// prelude itself: luacheck sees them as read-only globals of the scripts
// (.luacheckrc), so it cannot tell. Every file under lua/ is a script of
// ledgerLua and each is there (loadLua; luafiles tests the refusals).
func TestPreludeDefinesNothingUnused(t *testing.T) {
	_, err := loadLua(luaFiles)
	require.NoError(t, err)
	bodies := make([]string, 0, len(lua.lib))
	for _, p := range lua.lib {
		bodies = append(bodies, p.body)
	}
	require.Empty(t, luafiles.UnusedLocals(lua.prelude, bodies...))
}
