package luafiles_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/luafiles"
)

func TestReadTakeCheck(t *testing.T) {
	fsys := fstest.MapFS{
		"lua/prelude.lua":      {Data: []byte("local x = 1")},
		"lua/claim.lua":        {Data: []byte("return x")},
		"lua/locator/drop.lua": {Data: []byte("return 2")},
		"lua/notes.txt":        {Data: []byte("not Lua")},
	}
	f, err := luafiles.Read(fsys, "lua", "pkg: its Lua")
	require.NoError(t, err)
	require.Equal(t, "local x = 1", f.Take("prelude"))
	require.Equal(t, "return x", f.Take("claim"))
	require.Equal(t, "return 2", f.Take("locator/drop"))
	require.NoError(t, f.Check())

	f, err = luafiles.Read(fsys, "lua", "pkg: its Lua")
	require.NoError(t, err)
	require.Equal(t, "", f.Take("ack"))
	f.Take("prelude")
	require.EqualError(t, f.Check(), "pkg: its Lua: lua/ack.lua is missing; lua/claim.lua is no listed script; lua/locator/drop.lua is no listed script")

	_, err = luafiles.Read(fsys, "nowhere", "pkg: its Lua")
	require.ErrorContains(t, err, "pkg: its Lua: reading nowhere/")
}

func TestUnusedLocals(t *testing.T) {
	prelude := "-- helpers\nlocal function used() end\nlocal function spare() end\nlocal A, B = 1, 2\nlocal C = A -- C: never read\n"
	require.Equal(t, []string{"spare", "B", "C"}, luafiles.UnusedLocals(prelude, "return used()", "-- spare() in a comment\nreturn 0"))
	require.Empty(t, luafiles.UnusedLocals("local function f() end", "f()"))
}
