# tests/cli/serve_artifacts.sh: which files are a run's artifacts. lt.run.artifact registers
# regular files, refusing anything else at once naming the path (no hang on /dev/zero or a
# FIFO); a file outside the folder the run started in and its run store's folder (symlinks
# resolved) is recorded with a warning and never served. `ltrun serve` serves a registered
# file only while it lies under those folders with its recorded sha256, whatever the store's
# row says.
source "$(dirname "$0")/common.bash"
mkdir work db elsewhere
export LTRUN_DB=$SCRATCH/db/runs.db   # the store's folder is not the working folder
cd work
printf '<svg xmlns="http://www.w3.org/2000/svg"><text>fig</text></svg>' >fig.svg
echo "beside the store" >../db/beside.txt
echo "outside" >../elsewhere/x.txt

out=$("$LTRUN" --log -e 'print(lt.run.artifact("fig.svg")); print(lt.run.artifact("../db/beside.txt", {kind = "note"}))' 2>&1); rc=$?
check "files under the working folder and the store's folder are registered" equals "$rc" "0"
check "... returning the stored path" equals "$out" "$SCRATCH/work/fig.svg"$'\n'"$SCRATCH/db/beside.txt"
good=$(sql1 "select max(id) from runs")
check "... with the working folder recorded" equals "$(sql1 "select workdir from runs where id = $good")" "$SCRATCH/work"
check "... kinds" equals "$(sql1 "select group_concat(kind) from artifacts where run_id = $good")" '"svg,note"'

refused() {  # refused DESCRIPTION PATH EXPECTED: registering PATH fails at once naming EXPECTED
  local err rc
  err=$(timeout 20 "$LTRUN" --log -e "lt.run.artifact('$2')" 2>&1); rc=$?
  check "$1: refused, no hang (rc $rc)" equals "$rc" "1"
  check "$1: the error names it" contains "$err" "$3"
}
refused "/dev/zero" /dev/zero "lt.run.artifact: /dev/zero is a character device, not a regular file"
mkfifo fifo
refused "a FIFO" fifo "fifo is a FIFO, not a regular file"
mkdir folder
refused "a folder" folder "folder is a folder, not a regular file"
refused "a missing file" nothing.svg "nothing.svg does not exist"
err=$("$LTRUN" --log -e 'lt.run.artifact("fig.svg", {knd = "svg"})' 2>&1)
check "an unknown option: named" contains "$err" "lt.run.artifact: unknown option 'knd' (known: kind)"
check "nothing refused was stored" equals "$(sql1 "select count(*) from artifacts")" "2"

ln -s /etc/passwd link.svg
err=$("$LTRUN" --log -e 'lt.run.artifact("../elsewhere/x.txt"); lt.run.artifact("/etc/passwd", {kind = "svg"}); lt.run.artifact("link.svg")' 2>&1); rc=$?
out_run=$(sql1 "select max(id) from runs")
check "files outside the run's folders: the run goes on (rc $rc)" equals "$rc" "0"
check "... warned about, naming the resolved path and the folders" contains "$err" \
  "ltrun: warning: lt.run.artifact: ../elsewhere/x.txt ($SCRATCH/elsewhere/x.txt) lies outside the run's folders ($SCRATCH/work, $SCRATCH/db)"
check "... saying they will not be served" contains "$err" "/etc/passwd lies outside the run's folders ($SCRATCH/work, $SCRATCH/db): a run's artifacts are files under the folder it started in or its run store's folder, symlinks resolved; it is recorded, but ltrun serve will not serve it"
check "... a symlink named with its target" contains "$err" "link.svg (/etc/passwd) lies outside"
check "... recorded" equals "$(sql1 "select group_concat(path) from artifacts where run_id = $out_run")" "\"$SCRATCH/elsewhere/x.txt,/etc/passwd,/etc/passwd\""

# --- serving: the file, only while it is what was registered, where it was registered
"$LTRUN" serve --port 0 >serve.out 2>serve.err & pid=$!
trap 'kill $pid 2>/dev/null' EXIT
url=""
for _ in $(seq 1 100); do url=$(grep -o 'http://[^ ]*' serve.out); [ -n "$url" ] && break; sleep 0.1; done
[ -n "$url" ] || { cat serve.out serve.err >&2; exit 1; }
get() { curl -s -o body.out -w '%{http_code}' "${url}api/runs/${2:-$good}/artifacts/$1"; }

for k in 0 1 2; do
  check "a file registered from outside the run's folders is not served ($k)" equals "$(get $k "$out_run")" "403"
  check "... only a JSON error ($k)" equals "$(head -c 9 body.out)" '{"error":'
done
check "... saying why" contains "$(cat body.out)" "artifact 2 of run $out_run: /etc/passwd lies outside the run's folders"
check "a registered figure is served" equals "$(get 0)" "200"
check "... its bytes" equals "$(cat body.out)" "$(cat fig.svg)"
check "the file beside the store is served" equals "$(get 1)" "200"
cp fig.svg fig.orig
echo '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>' >fig.svg
check "a file rewritten since registration: the run's own copy is served" equals "$(get 0)" "200"
check "... the registered bytes" equals "$(cat body.out)" "$(cat fig.orig)"
orig_sha=$(sha256sum fig.orig | cut -c1-64)
copy=$SCRATCH/db/runs.db.artifacts/sha256/${orig_sha:0:2}/$orig_sha
check "... kept in the store's artifact folder by content" equals "$(cat "$copy")" "$(cat fig.orig)"
chmod u+w "$copy"; echo tampered >"$copy"
check "the copy changed: refused (409)" equals "$(get 0)" "409"
check "... naming the registered hash" contains "$(cat body.out)" "has changed since the run registered it (sha256 $orig_sha then"
check "... and not the hash of what is there now" test "$(grep -c "$(echo tampered | sha256sum | cut -c1-64)" body.out)" = 0
cp fig.orig "$copy"
cp fig.orig fig.svg
check "the same bytes again: served" equals "$(get 0)" "200"

# issue 34, defect 17: two runs of one study with the same --out: each keeps its own figure
mkdir out
fig_run() { "$LTRUN" --log -e "local f = io.open('out/fig.svg', 'w'); f:write('<svg>$1</svg>'); f:close(); lt.run.artifact('out/fig.svg')" ; }
fig_run first && first=$(sql1 "select max(id) from runs")
fig_run second && second=$(sql1 "select max(id) from runs")
check "the earlier run's figure after a later run rewrote it" equals "$(get 0 "$first")" "200"
check "... its own bytes" equals "$(cat body.out)" "<svg>first</svg>"
check "the later run's figure" equals "$(get 0 "$second")" "200"
check "... its own bytes" equals "$(cat body.out)" "<svg>second</svg>"
check "the earlier run's page: its size, not refused" contains "$(curl -s "${url}api/runs/$first")" '"bytes":16,"exists":true'

# issue 34, defect 5: /proc/self/pagemap is a "regular file" of 0 bytes that reads without end
err=$(timeout 20 "$LTRUN" --log -e 'lt.run.artifact("/proc/self/pagemap")' 2>&1); rc=$?
check "/proc/self/pagemap as an artifact: refused at once (rc $rc)" equals "$rc" "1"
check "... naming it" contains "$err" "lt.run.artifact: /proc/self/pagemap"
check "... and why" contains "$err" "lies under /proc, /sys or /dev: not a file on disk"

# a store row pointing elsewhere (an edited or foreign store), even with the right sha256
sqlite3 "$LTRUN_DB" "update artifacts set path = '/etc/passwd', sha256 = '$(sha256sum /etc/passwd | cut -c1-64)' where run_id = $good and kind = 'svg'"
check "a row changed to /etc/passwd: refused (403)" equals "$(get 0)" "403"
check "... not a byte of it" test "$(grep -c 'root:' body.out)" = 0
check "... saying why" contains "$(cat body.out)" "/etc/passwd lies outside the run's folders"
sqlite3 "$LTRUN_DB" "update artifacts set path = '$SCRATCH/work/link.svg' where run_id = $good and kind = 'svg'"
check "a row naming a symlink out of the folder: refused" equals "$(get 0)" "403"
check "... naming where it leads" contains "$(cat body.out)" "link.svg (/etc/passwd) lies outside"
sqlite3 "$LTRUN_DB" "update artifacts set path = '$SCRATCH/work/fifo' where run_id = $good and kind = 'svg'"
check "a row naming a FIFO: refused at once" equals "$(timeout 20 curl -s -o body.out -w '%{http_code}' "${url}api/runs/$good/artifacts/0")" "403"
sqlite3 "$LTRUN_DB" "update artifacts set path = '$SCRATCH/work/fig.svg', sha256 = '$(printf x | sha256sum | cut -c1-64)' where run_id = $good and kind = 'svg'"
check "a row whose sha256 was changed: refused (409)" equals "$(get 0)" "409"
sqlite3 "$LTRUN_DB" "update artifacts set path = '$SCRATCH/work/fig.svg', sha256 = null where run_id = $good and kind = 'svg'"
check "a row without a sha256: refused (409)" equals "$(get 0)" "409"
kill -INT $pid; wait $pid
finish
