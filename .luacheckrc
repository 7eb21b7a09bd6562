-- luacheck configuration of the Lua scripts (test/lint runs luacheck on the
-- .lua files of the packages it lints; docs/operations.md, "Tests and the
-- lint gate"). Redis runs Lua 5.1 with its own libraries as read-only
-- globals, and without io, os, package, require, dofile or loadfile.
std = 'lua51+redis'
stds.redis = {read_globals = {'KEYS', 'ARGV', 'redis', 'cjson', 'cmsgpack', 'bit', 'struct'}}
not_globals = {'io', 'os', 'package', 'require', 'dofile', 'loadfile', 'module'}

-- The directories whose scripts each run after the prelude.lua beside them
-- (prelude and script as one chunk, or one function library: see each
-- package's scripts.go). A script there sees the prelude's top-level locals
-- as read-only globals, and the prelude's own are not reported unused.
-- Subdirectories (orchestrator/tasks/lua/locator) run alone.
local preluded = {'orchestrator/tasks/lua', 'orchestrator/holds/lua'}

-- topLevel lists the names a prelude defines at its top level: its lines
-- "local function NAME" and "local NAME[, NAME...] =". The path is tried
-- from the working directory and the ones above it, as luacheck finds this
-- file in the nearest of them.
local function topLevel(path)
  local f
  for up = 0, 8 do
    f = io.open(string.rep('../', up) .. path)
    if f then break end
  end
  if not f then error('.luacheckrc: ' .. path .. ' not found from here or above') end
  local names = {}
  for line in f:lines() do
    local fn = line:match('^local%s+function%s+([%a_][%w_]*)')
    local list = line:match('^local%s+([%a_][%w_%s,]*)=')
    if fn then
      names[#names + 1] = fn
    elseif list then
      for name in list:gmatch('[%a_][%w_]*') do names[#names + 1] = name end
    end
  end
  f:close()
  return names
end

for _, dir in ipairs(preluded) do
  local names = topLevel(dir .. '/prelude.lua')
  files[dir .. '/*.lua'] = {read_globals = names}
  local unused = {}
  for i, name in ipairs(names) do unused[i] = '211/' .. name end
  files[dir .. '/prelude.lua'] = {read_globals = {}, ignore = unused}
end
