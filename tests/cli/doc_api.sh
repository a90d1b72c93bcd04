# tests/cli/doc_api.sh: docs/reference/lua-api.md is what `ltrun doc api` writes from the
# option declarations the runtime checks (runtime/core/api.h), so an option added to a function
# without regenerating the page fails here; and a check reads its declaration.
src=$(cd "$(dirname "$0")/../.." && pwd)  # (common.bash moves into the scratch folder)
source "$(dirname "$0")/common.bash"
"$LTRUN" doc api --out api.md 2>err.txt
check "ltrun doc api runs" equals "$?" 0
check "docs/reference/lua-api.md is up to date (regenerate: ltrun doc api --out docs/reference/lua-api.md)" \
  diff -u "$src/docs/reference/lua-api.md" api.md
check "lt.model.load's options are listed" contains "$(cat api.md)" $'| `device` | string |'
check "lt.train.causal_lm lists the shared loop options" contains "$(sed -n '/^### lt.train.causal_lm/,/^### /p' api.md)" '| `clip_grad` |'
check "methods of classes are there" contains "$(cat api.md)" '### model:generate'
check "Lua-implemented functions have their entry (lib/lt/init.lua)" contains "$(sed -n '/^### lt.layers.parse/,/^### /p' api.md)" '(Lua)'
check "an option's default and range are shown" contains "$(sed -n '/^### lt.rl.grpo$/,/^### /p' api.md)" '| `iterations` | integer | `10` ≥ 1 |'
out=$("$LTRUN" -e 'lt.model.load("nowhere", {dtypo = "float32"})' 2>&1)
check "an undeclared key is refused, naming the declared ones" contains "$out" "lt.model.load: unknown option 'dtypo' (known: device, dtype)"
"$LTRUN" doc ap >/dev/null 2>err.txt
check "a wrong doc topic is named" contains "$(cat err.txt)" 'ltrun doc api'
finish
