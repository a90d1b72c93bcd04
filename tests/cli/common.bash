# tests/cli/common.bash: sourced by tests/cli/*.sh, which CTest runs as `bash T.sh LTRUN SCRATCH`.
set -uo pipefail
LTRUN=$(realpath "$1")
SCRATCH=$2
rm -rf "$SCRATCH"; mkdir -p "$SCRATCH"; cd "$SCRATCH"
export LTRUN_DB=$SCRATCH/runs.db
failures=0 checks=0

check() {  # check DESCRIPTION COMMAND...: the command must succeed
  local what=$1; shift
  checks=$((checks + 1))
  if ! "$@"; then echo "FAIL: $what" >&2; failures=$((failures + 1)); fi
}
# the text $2 in $1, as one string (grep -F would take each line of $2 as a pattern of its own,
# and an empty line, as in $'\nx\n', matches anything)
contains() { [[ "$1" == *"$2"* ]] || { echo "  expected to find: $2" >&2; echo "  in: $1" >&2; return 1; }; }
equals() { [ "$1" == "$2" ] || { echo "  expected: $2" >&2; echo "  got:      $1" >&2; return 1; }; }
sql1() { "$LTRUN" sql "$1" --csv | sed -n 2p; }  # first row, first columns, as CSV

finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [ "$failures" -eq 0 ]
}

skip_without_bwrap() {  # exit 77 (skipped) where bwrap cannot make namespaces
  local why
  if ! why=$(bwrap --unshare-all --unshare-user --cap-drop ALL --disable-userns --ro-bind / / true 2>&1); then
    echo "SKIP: bwrap cannot make namespaces here: $why" >&2
    exit 77
  fi
}
