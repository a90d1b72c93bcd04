# tests/cli/repl_pty.sh: the REPL on a terminal (issue 38 item 5): a table pretty-prints (nested,
# bounded, a tensor by shape and dtype), `?lt.model.load` shows its declared options, Tab after
# `m.` offers the fields n_layers and tokenizer, Tab after `m.tokenizer:` the tokenizer's methods
# (encode, not the model's forward), `%time` reports a wall time, an error's traceback has no
# `[C]: at 0x...`, and the session is not stored without --log. Issue 46 item 4: `%time` on
# statements, `?` alone prints the usage, an unknown option key gets "did you mean", tensors
# print nested by their shape as torch prints them, and exit / quit / quit() / exit() leave.
here=$(cd "$(dirname "$0")" && pwd)  # (common.bash moves into the scratch folder)
source "$here/common.bash"
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
"$LTRUN" model new --layers 2 --hidden 16 --heads 2 --kv-heads 1 --vocab 300 m >/dev/null 2>&1
export LTRUN_HISTORY=$SCRATCH/history
out=$(python3 "$here/repl_pty.py" "$LTRUN" "$SCRATCH/m" 2>&1 | tr -d '\r')
section() { awk -v s="=== $1" '$0 == s { on = 1; next } /^=== / { on = 0 } on' <<<"$out"; }
check "a table pretty-prints, nested" contains "$(section table_shown)" 'list = {1, 2, 3}'
check "... bounded in depth" contains "$(section table_shown)" 'deep = {a = {b = {...}}}'
check "... a tensor nested by its shape, on one line" contains "$(section table_shown)" 'w = tensor([[0, 0, 0], [0, 0, 0]], shape=[2, 3], dtype=float32, device=cpu)'
check "... not as table: 0x" equals "$(grep -c 'table: 0x' <<<"$(section table_shown)")" 0
check "?lt.model.load: its signature" contains "$(section help)" 'lt.model.load(path[, opts]) → model'
check "?lt.model.load: its options" contains "$(section help)" 'dtype'
check "?lt.model.load: ... each" contains "$(section help)" 'device'
check "?m:generate: a method's options" contains "$(section method_help)" 'max_new_tokens'
check "m.<Tab> offers n_layers" contains "$(section fields)" 'n_layers'
check "m.<Tab> offers tokenizer" contains "$(section fields)" 'tokenizer'
check "... and completing it runs" contains "$(section fields_done)" $'\n2\n'
check "m.tokenizer:<Tab> offers encode" contains "$(section nested)" 'encode'
check "... the tokenizer's methods, not the model's" equals "$(grep -c 'forward' <<<"$(section nested)")" 0
check "%time reports a wall time" contains "$(section time)" 'wall '
check "%time returns the value" contains "$(section time)" $'\n3\n'
check "%time on a statement: timed" contains "$(section time_statement)" 'wall '
check "... and it ran" contains "$(section time_statement_done)" $'\n42\n'
check "%time on statements with a local: timed" contains "$(section time_statements)" 'wall '
check "... and they ran" contains "$(section time_statements_done)" $'\n55\n'
check "? alone: the REPL's usage" contains "$(section usage)" '%time CODE'
check "... not ' is nil'" equals "$(grep -c 'is nil' <<<"$(section usage)")" 0
check "an unknown option key: did you mean" contains "$(section typo)" "unknown option 'dtyp' (known: device, dtype); did you mean dtype?"
check "a tensor as torch prints it: rows, aligned" contains "$(section tensor)" $'tensor([[ 1,  2,  3],\n        [ 4,  5, 60]], shape=[2, 3], dtype=float32, device=cpu)'
check "a 3-d tensor: a blank line between its matrices" contains "$(section tensor_3d)" $'tensor([[[0, 0],\n         [0, 0]],\n\n        [[0, 0],\n         [0, 0]]], shape=[2, 2, 2]'
check "a large tensor: its first and last 3 around ..." contains "$(section tensor_big)" 'tensor([   0,    1,    2, ..., 1997, 1998, 1999], shape=[2000]'
check "an error: its message" contains "$(section error)" 'oops'
check "... and no [C] or builtin frame at 0x..." equals "$(grep -c '\[C\]\|\[builtin\|at 0x' <<<"$(section error)")" 0
check "a nested error keeps its Lua frames" contains "$(section nested_error)" "in function 'inner'"
check "exit leaves the REPL, exit 0" contains "$out" 'exit 0'
# quit, quit() and exit() leave too (without a terminal the REPL reads lines from stdin)
for word in quit 'quit()' 'exit()'; do
  out2=$(printf '%s\nprint("still here")\n' "$word" | "$LTRUN" 2>&1); rc=$?
  check "$word leaves, exit 0" equals "$rc" 0
  check "$word leaves: nothing after it runs" equals "$(grep -c 'still here' <<<"$out2")" 0
done
check "without --log nothing is stored" equals "$(test -f runs.db && sql1 'select count(*) from runs' || echo 0)" 0
finish
