# tests/cli/seeds.sh: the run seed reaches every seeded function. One probe script prints, per
# seeded binding called without `seed =`, a digest of what it drew; it runs twice with
# --seed 1 (every line the same), once with --seed 2 (every line different), and once without
# --seed (the default is 1: the same lines as --seed 1). Stream seeds are checked too.
source "$(dirname "$0")/common.bash"

cat > probe.lua <<'LUA'
local dir = os.getenv("PROBE_DIR")
local function digest(t)  -- order-sensitive hash of a tensor's values (integers or floats)
  local h = 0
  for i, v in ipairs(t:reshape({-1}):to("float64"):totable()) do h = (h * 31 + math.floor(v * 1e4)) % 2147483647 end
  return h
end
local function say(k, v) print(k .. " " .. tostring(v)) end
say("seed", ("%.0f"):format(lt.run.seed()))
say("stream.data.windows", ("%.0f"):format(lt.run.seed("data.windows")))
-- fixed inputs (explicit seeds): a tokenizer model and a corpus of 200 one-line documents
lt.model.new{ out = dir .. "/tok", arch = "qwen3", layers = 1, hidden = 16, heads = 2, kv_heads = 1, vocab = 300, seed = 5 }
local f = assert(io.open(dir .. "/corpus.txt", "w"))
for i = 1, 200 do f:write(("document %d says %d and %d\n%%\n"):format(i, i * 7 % 13, i * 3 % 11)) end
f:close()
local packed = dir .. "/packed_fixed"
lt.data.pack{ tokenizer = dir .. "/tok", inputs = { dir .. "/corpus.txt" }, out = packed, val = 0.3, seed = 3, progress = false }
-- data.pack: which documents go to validation
local p2 = dir .. "/packed_" .. ("%.0f"):format(lt.run.seed())
lt.data.pack{ tokenizer = dir .. "/tok", inputs = { dir .. "/corpus.txt" }, out = p2, val = 0.3, progress = false }
say("data.pack", digest(lt.data.windows(p2, { split = "val", seq_len = 8, n = -1, shuffle = false, seed = 0 })))
say("data.windows", digest(lt.data.windows(packed, { seq_len = 8, n = 6 })))
-- model.init
local mdir = dir .. "/m_" .. ("%.0f"):format(lt.run.seed())
lt.model.new{ out = mdir, arch = "qwen3", layers = 2, hidden = 16, heads = 2, kv_heads = 1, vocab = 300,
              tokenizer = dir .. "/tok" }
local m = lt.model.load(mdir)
say("model.init", digest(m:parameters()["model.layers.0.mlp.up_proj.weight"]))
-- train.order: same model, same lr; only the data order can differ
local fixed = lt.model.load(dir .. "/tok")
local r = lt.train.causal_lm(fixed:clone():train_only("all"), { data = packed, seq_len = 8, steps = 2, micro_batch = 2, lr = 1e-2,
                                      log = false, progress = false })
say("train.order", ("%.6f"):format(r.losses[1]))
-- generate: sampling
local g = fixed:generate("document 1", { max_new_tokens = 12, temperature = 1.5 })
say("generate", g)
-- eval: sampled answers
local items = {}
for i = 1, 3 do items[i] = { id = "q" .. i, bench = "gsm8k", question = ("what is %d + %d?"):format(i, i), answer = tostring(2 * i) } end
local sc = lt.eval.score(fixed, items, nil, { protocols = { "generate" }, samples = 2, temperature = 1.5,
                                               max_new_tokens = 6, bench = "probe", template = "{question}" })
local preds = {}
for _, it in ipairs(sc.items) do preds[#preds + 1] = it.output end
say("eval", table.concat(preds, "|"))
-- rl.rollout
local ro = lt.rl.rollout(fixed, { "document 2" }, { group_size = 2, max_response = 8, temperature = 1.5 })
say("rl.rollout", table.concat(ro.texts, "|"))
-- rl.prompts: the n-item subset
local jf = assert(io.open(dir .. "/items.jsonl", "w"))
for i = 1, 40 do jf:write(('{"question": "q%d", "answer": "%d"}\n'):format(i, i)) end
jf:close()
local ps = lt.rl.prompts(dir .. "/items.jsonl", { n = 5 })
local ids = {}
for _, it in ipairs(ps) do ids[#ids + 1] = it.question end
say("rl.prompts", table.concat(ids, ","))
-- rl.grpo: the n-item subset and the rollouts
local seen = {}
lt.rl.grpo(fixed:clone():train_only("all"), { data = dir .. "/items.jsonl", n = 4, template = "{question} =", prompts = 4, group_size = 2,
                           max_response = 3, iterations = 1, micro_batch = 8, log = false, progress = false,
                           rewards = { probe = function(item, response) seen[#seen + 1] = item.question .. ":" .. response; return 0 end } })
table.sort(seen)
say("rl.grpo", table.concat(seen, "|"))
LUA

run_probe() {  # run_probe TAG ARGS...: the probe's lines in TAG.out
  local tag=$1; shift
  mkdir -p "$SCRATCH/$tag"
  PROBE_DIR=$SCRATCH/$tag "$LTRUN" --db "$SCRATCH/$tag.db" "$@" probe.lua > "$tag.out" 2> "$tag.err" ||
    { echo "probe $tag failed:" >&2; cat "$tag.err" >&2; return 1; }
}
check "probe --seed 1" run_probe a --seed 1
check "probe --seed 1 again" run_probe b --seed 1
check "probe --seed 2" run_probe c --seed 2
check "probe without --seed" run_probe d
check "probe --seed=2" run_probe e --seed=2

streams="data.pack data.windows model.init train.order generate eval rl.rollout rl.prompts rl.grpo"
line() { grep "^$2 " "$1.out" | cut -d' ' -f2-; }
for s in $streams; do
  check "$s: a line was printed" test -n "$(line a "$s")"
  check "$s: the same seed repeats it" equals "$(line b "$s")" "$(line a "$s")"
  check "$s: --seed 2 changes it" test "$(line c "$s")" != "$(line a "$s")"
done
check "no --seed is --seed 1" equals "$(cat d.out)" "$(cat a.out)"
check "--seed=2 is --seed 2" equals "$(cat e.out)" "$(cat c.out)"
check "lt.run.seed() is the run seed" equals "$(line a seed)" "1"
check "lt.run.seed() under --seed 2" equals "$(line c seed)" "2"
# stream seeds pinned against an independent computation (Python, from the published
# splitmix64 and FNV-1a constants): splitmix64(splitmix64(seed) ^ fnv1a(name)) mod 2^53
check "stream seed of run 1" equals "$(line a stream.data.windows)" "4512607255414897"
check "stream seed of run 2" equals "$(line c stream.data.windows)" "7160536211181867"
check "runs.seed records the default" equals "$("$LTRUN" --db "$SCRATCH/d.db" sql "select seed from runs where parent_id is null" --csv | sed -n 2p)" "1"

# --seed fresh: a fresh seed, recorded; bad values refused naming the option
out=$("$LTRUN" --db fresh.db --seed fresh --log -e 'print(("%.0f"):format(lt.run.seed()))' 2>&1)
check "--seed fresh runs" test -n "$out"
check "--seed fresh is recorded" equals "$("$LTRUN" --db fresh.db sql "select seed from runs" --csv | sed -n 2p)" "$out"
for bad in abc -3 1.5 9007199254740992 99999999999999999999; do
  err=$("$LTRUN" --db bad.db --seed "$bad" -e 'print(1)' 2>&1); rc=$?
  check "--seed $bad refused" equals "$rc" "2"
  check "--seed $bad: the message names --seed" contains "$err" "--seed $bad"
done
check "lt.seed is gone" equals "$("$LTRUN" --db g.db -e 'print(lt.seed)')" "nil"
finish
