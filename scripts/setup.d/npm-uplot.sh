#!/usr/bin/env bash
# scripts/setup.d/npm-uplot.sh: installs uPlot (the chart library of `ltrun serve`, embedded
# into the binary at build time by runtime/serve/CMakeLists.txt) into build-deps/npm.
# Pinned version; does nothing when already installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="$root/build-deps/npm"
uplot_version=1.6.32

installed() {
  node -e "
    const v = require('$dest/node_modules/uplot/package.json').version;
    process.exit(v === '$uplot_version' ? 0 : 1);" 2>/dev/null
}

if installed; then
  exit 0
fi
command -v npm >/dev/null || { echo "npm-uplot: npm not found (install nodejs and npm)" >&2; exit 1; }
mkdir -p "$dest"
[[ -f "$dest/package.json" ]] || echo '{"name":"ltrun-test-deps","private":true}' > "$dest/package.json"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error "uplot@$uplot_version"
installed || { echo "npm-uplot: install into $dest did not produce uplot $uplot_version" >&2; exit 1; }
