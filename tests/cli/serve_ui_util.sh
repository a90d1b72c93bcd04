# tests/cli/serve_ui_util.sh: the pure helpers of the `ltrun serve` UI (runtime/serve/ui/util.js:
# tick labels, axis widths, run colours, scalars apart from curves) under node
# (tests/serve/util_test.js). The browser test (serve_browser.sh) checks them on the page.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # tests/, before common.bash changes folder
source "$here/cli/common.bash"
check "tick labels, axis widths, colours, metric groups" node "$here/serve/util_test.js" "$here/../runtime/serve/ui/util.js"
finish
