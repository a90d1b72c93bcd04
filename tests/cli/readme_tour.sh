# tests/cli/readme_tour.sh: every command of README.md's "A short tour" block runs as written,
# in order, from a folder laid out like a clone after `scripts/test` (build/, experiments/,
# build-deps/ as links), on a small stand-in for the embedded default base (LTRUN_MODELS), so
# that the first line takes seconds instead of the base's 1,200 steps. Two lines cannot run as
# they stand in a test and are run the closest way: `serve` (it serves until stopped) on a free
# port (--port 0), asked for /api/runs and stopped; the REPL with its input from a pipe. `rerun`
# asks a person before it runs a stored script: it runs under a terminal (script(1)) answered "y".
root=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/common.bash"
command -v curl >/dev/null || { echo "curl missing"; exit 77; }
unset LTRUN_DB  # the tour uses the default ./ltrun.db
ln -s "$(dirname "$LTRUN")" build
ln -s "$root/experiments" experiments
[ -d "$root/build-deps" ] && ln -s "$root/build-deps" build-deps
export LTRUN_MODELS=$SCRATCH/stand-in
"$LTRUN" model new --layers 2 --hidden 32 --heads 2 --kv-heads 1 "$LTRUN_MODELS/tiny-qwen3" >/dev/null 2>&1
awk '/^## A short tour/ { on = 1 } on && /^```sh$/ { code = 1; next } code && /^```$/ { exit } code { print }' \
  "$root/README.md" | grep -v '^ *#' >tour.txt
check "the tour has its commands ($(wc -l <tour.txt))" test "$(wc -l <tour.txt)" -ge 10
# README.md is a guide (issue 37): at most 300 lines, the reference in docs/ pages it lists
check "README.md has at most 300 lines ($(wc -l <"$root/README.md"))" test "$(wc -l <"$root/README.md")" -le 300
check "README.md's documentation table lists docs/ pages" \
  test "$(grep -c '^| \[[a-z_/-]*\.md\](docs/' "$root/README.md")" -ge 15
n=0
while IFS= read -r line; do
  n=$((n + 1))
  case $line in
    "build/ltrun serve"*)
      build/ltrun serve --port 0 >serve.out 2>&1 & pid=$!
      url=""
      for _ in $(seq 100); do url=$(grep -o 'http://[0-9.]*:[0-9]*/' serve.out | head -1); [ -n "$url" ] && break; sleep 0.1; done
      got=$(curl -s "${url}api/runs" | head -c 200)
      kill "$pid"; wait "$pid" 2>/dev/null
      check "tour line $n: $line (answers /api/runs)" contains "$got" '"id"' ;;
    "build/ltrun rerun"*)
      out=$( (sleep 2; printf 'y\n') | script -qec "${line%%#*}" /dev/null 2>&1); rc=$?
      check "tour line $n: $line (answered y at its question)" equals "$rc" "0"
      [ "$rc" = 0 ] || tail -5 <<<"$out" >&2 ;;
    "build/ltrun "|"build/ltrun")
      out=$(printf '=1+1\n' | build/ltrun 2>&1); rc=$?
      check "tour line $n: the REPL (=1+1 from a pipe)" equals "$rc:$(grep -c '^2$' <<<"$out")" "0:1" ;;
    *"build-deps/"*)
      if [ ! -d build-deps ]; then echo "skip tour line $n: no build-deps (scripts/setup installs them)"; continue; fi ;&
    *)
      out=$(bash -c "$line" 2>&1 </dev/null); rc=$?
      check "tour line $n: $line" equals "$rc" "0"
      [ "$rc" = 0 ] || tail -5 <<<"$out" >&2 ;;
  esac
done <tour.txt
finish
