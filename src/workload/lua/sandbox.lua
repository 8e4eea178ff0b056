-- What a workload may reach: run once in every Lua state before the workload file,
-- as text. Workloads are code; this keeps the harmless part of the standard library
-- and removes what reaches the machine or the process (docs/workloads.md, "Workloads are code").

-- Text chunks only: corrupted bytecode crashes the interpreter, and no workload needs it.
local load, loadfile, searchpath = load, loadfile, package.searchpath
_G.load = function(chunk, name, _, ...) return load(chunk, name, "t", ...) end
_G.loadfile = function(file, _, ...) return loadfile(file, "t", ...) end
_G.dofile = function(file)
  local f = assert(loadfile(file, "t"))
  return f()
end

-- Output to the terminal only: no files opened, no commands run.
io = { write = io.write, stdout = io.stdout, stderr = io.stderr }

-- Time and the environment; no commands, file removal, locale or exit.
os = {
  clock = os.clock, date = os.date, difftime = os.difftime, getenv = os.getenv, time = os.time,
  exit = function()
    error("os.exit is not available to workloads (it would end kvmark without a report): "
      .. "return from run(), or raise an error to fail the point", 2)
  end,
}

-- require finds Lua modules (text) on package.path only: no C modules.
package.loaded.io, package.loaded.os = io, os
package.cpath, package.loadlib = "", nil
package.searchers[2] = function(name)
  local path, err = searchpath(name, package.path)
  if not path then return "\n\t" .. err end
  local f, why = loadfile(path, "t")
  if not f then
    error(string.format("error loading module '%s' from file '%s':\n\t%s", name, path, why), 2)
  end
  return f, path
end
package.searchers[3], package.searchers[4] = nil, nil
