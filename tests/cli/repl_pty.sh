# tests/cli/repl_pty.sh: the REPL on a terminal (issue 38 item 5): a table pretty-prints (nested,
# bounded, a tensor by shape and dtype), `?lt.model.load` shows its declared options, Tab after
# `m.` offers the fields n_layers and tokenizer, Tab after `m.tokenizer:` the tokenizer's methods
# (encode, not the model's forward), `%time` reports a wall time, an error's traceback has no
# `[C]: at 0x...`, and the session is not stored without --log.
here=$(cd "$(dirname "$0")" && pwd)  # (common.bash moves into the scratch folder)
source "$here/common.bash"
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
"$LTRUN" model new --layers 2 --hidden 16 --heads 2 --kv-heads 1 --vocab 300 m >/dev/null 2>&1
export LTRUN_HISTORY=$SCRATCH/history
out=$(python3 "$here/repl_pty.py" "$LTRUN" "$SCRATCH/m" 2>&1 | tr -d '\r')
section() { awk -v s="=== $1" '$0 == s { on = 1; next } /^=== / { on = 0 } on' <<<"$out"; }
check "a table pretty-prints, nested" contains "$(section table_shown)" 'list = {1, 2, 3}'
check "... bounded in depth" contains "$(section table_shown)" 'deep = {a = {b = {...}}}'
check "... a tensor by shape, dtype and values" contains "$(section table_shown)" 'w = tensor[2, 3] float32 cpu {0, 0, 0, 0, 0, 0}'
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
check "an error: its message" contains "$(section error)" 'oops'
check "... and no [C] or builtin frame at 0x..." equals "$(grep -c '\[C\]\|\[builtin\|at 0x' <<<"$(section error)")" 0
check "a nested error keeps its Lua frames" contains "$(section nested_error)" "in function 'inner'"
check "the REPL exits 0" contains "$out" 'exit 0'
check "without --log nothing is stored" equals "$(test -f runs.db && sql1 'select count(*) from runs' || echo 0)" 0
finish
