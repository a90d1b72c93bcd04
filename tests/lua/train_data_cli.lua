-- tests/lua/train_data_cli.lua: the `ltrun data pack` / `ltrun data info` command line (run as
-- a child process of this ltrun), and what lt.data reads back from its output.
local T = require "lt.test"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_train_data_cli"
os.execute("rm -rf '" .. tmp .. "' && mkdir -p '" .. tmp .. "'")
-- the shell that io.popen starts is a child of this ltrun process
local p = io.popen("readlink /proc/$PPID/exe")
local ltrun = p:read("*l")
p:close()
lt.model.new{ out = tmp .. "/m", layers = 1, hidden = 32, heads = 4, kv_heads = 2, vocab = 300, seed = 1 }

local function sh(cmd)
  local f = io.popen(cmd .. " 2>&1; echo \"rc=$?\"")
  local out = f:read("*a")
  f:close()
  return out, tonumber(out:match("rc=(%d+)%s*$"))
end

local f = assert(io.open(tmp .. "/a.jsonl", "w"))
for i = 1, 50 do f:write(('{"body": "document %d about cats and dogs"}\n'):format(i)) end
f:close()
f = assert(io.open(tmp .. "/latin1.txt", "w")); f:write("caf\233\n"); f:close()

T.case("data pack: JSONL with a field name, validation share", function()
  local out, rc = sh(("%q --seed 4 data pack --tokenizer %q --out %q --field body --val 0.2 %q"):format(
    ltrun, tmp .. "/m", tmp .. "/packed", tmp .. "/a.jsonl"))
  T.eq(rc, 0, out)
  T.ok(out:find("50 documents"), out)
  local info = lt.data.info(tmp .. "/packed")
  T.ok(info.val_tokens > 0 and info.train_tokens > info.val_tokens, "split")
  local i_out, i_rc = sh(("%q data info %q"):format(ltrun, tmp .. "/packed"))
  T.eq(i_rc, 0); T.ok(i_out:find("train " .. info.train_tokens .. " tokens"), i_out)
end)

T.case("data pack: errors name the file and exit 2", function()
  local out, rc = sh(("%q data pack --tokenizer %q --out %q %q"):format(ltrun, tmp .. "/m", tmp .. "/x",
                                                                          tmp .. "/latin1.txt"))
  T.eq(rc, 2, out)
  T.ok(out:find("latin1.txt is not UTF%-8"), out)
  local o2, rc2 = sh(("%q data pack --out %q %q"):format(ltrun, tmp .. "/x", tmp .. "/a.jsonl"))
  T.eq(rc2, 2); T.ok(o2:find("%-%-tokenizer PATH is required"), o2)
  local o3, rc3 = sh(("%q data pack --tokenizer %q --out %q %q"):format(ltrun, tmp .. "/m", tmp .. "/y",
                                                                          tmp .. "/a.jsonl"))
  T.eq(rc3, 2); T.ok(o3:find('a.jsonl:1: no string field "text"'), o3)
end)

T.finish()
