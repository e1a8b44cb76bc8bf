-- wrk script for bench/cache.sh's miss rows: every request a URL never asked before,
-- <path>?r=<run>&t=<thread>&n=<counter> (the run id is the script's first argument, so the
-- rounds of one bench do not repeat each other's URLs either). The upstream ignores the query.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

local prefix
local n = 0
function init(args)
  prefix = wrk.path .. "?r=" .. (args[1] or "0") .. "&t=" .. tid .. "&n="
end

function request()
  n = n + 1
  return wrk.format(nil, prefix .. n)
end
