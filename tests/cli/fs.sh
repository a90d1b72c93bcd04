# tests/cli/fs.sh: lt.fs (no shell): mkdir -p with an ownership marker, list, exists, and
# remove that refuses folders ltrun did not make; studies never build shell commands, so a
# stored argument cannot run one, on the first run or on rerun.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/common.bash"

out=$("$LTRUN" -e '
print(lt.fs.mkdir("a/b/c"), lt.fs.mkdir("a/b/c"), lt.fs.is_dir("a/b/c"), lt.fs.exists("a/nope"))
local f = io.open("a/b/c/data.txt", "w"); f:write("x"); f:close()
print(table.concat(lt.fs.list("a/b/c"), " "))
print(lt.fs.remove("a/b"), lt.fs.exists("a/b"), lt.fs.exists("a"), lt.fs.remove("a/b"))')
check "mkdir -p, list, exists, remove" equals "$out" $'true\tfalse\ttrue\tfalse\n.ltrun-owned data.txt\ntrue\tfalse\ttrue\tfalse'
check "each folder mkdir made is marked" equals "$(ls -A a)" ".ltrun-owned"

mkdir -p users/keep && echo precious > users/keep/notes.txt
err=$("$LTRUN" -e 'lt.fs.remove("users")' 2>&1); rc=$?
check "a folder ltrun did not make: refused" equals "$rc" "1"
check "refusal names the folder and the marker" contains "$err" "lt.fs.remove users: refusing to delete a folder that ltrun did not create"
check "the user's file is still there" equals "$(cat users/keep/notes.txt)" "precious"
out=$("$LTRUN" -e 'lt.fs.mkdir("users/keep/sub"); print(lt.fs.remove("users/keep/sub"))')
check "mkdir in a user's folder marks only what it made" equals "$out:$(ls -A users/keep)" "true:notes.txt"
mkdir empty_one
check "an empty folder may go" equals "$("$LTRUN" -e 'print(lt.fs.remove("empty_one"))')" "true"
ln -s "$PWD/users" link
check "a link is removed as a link" equals "$("$LTRUN" -e 'print(lt.fs.remove("link"))'):$(cat users/keep/notes.txt)" "true:precious"
err=$("$LTRUN" -e 'lt.fs.remove("users/keep/notes.txt")' 2>&1)
check "a file is not a folder" contains "$err" "not a folder"
err=$("$LTRUN" -e 'lt.fs.mkdir("users/keep/notes.txt/x")' 2>&1)
check "mkdir through a file: named" contains "$err" "users/keep/notes.txt exists and is not a folder"

# a removal that fails part-way (here: a busy mount point inside) keeps the folder's marker, so
# that it may be tried again once whatever held it is gone (where mount namespaces work)
if unshare -m true 2>/dev/null; then
  "$LTRUN" -e 'lt.fs.mkdir("busy/m"); io.open("busy/file.txt", "w"):close()'
  out=$(unshare -m sh -c "mount -t tmpfs none busy/m && '$LTRUN' -e 'print(pcall(lt.fs.remove, \"busy\"))'; ls -A busy")
  check "a failed removal names the busy folder" contains "$out" "busy/m: Device or resource busy"
  check "a failed removal keeps the marker" contains "$out" ".ltrun-owned"
  check "it may be tried again" equals "$("$LTRUN" -e 'print(lt.fs.remove("busy"))'):$(ls -A . | grep -c '^busy$')" "true:0"
fi

# the studies and lib/lt use lt.fs, never a shell (a study's own test, experiments/STUDY/test.lua,
# may, as tests/lua/*.lua do)
check "no os.execute / io.popen in experiments/ or lib/lt/ (sub-folders included)" \
  equals "$(grep -rl --include='*.lua' --exclude=test.lua 'os\.execute\|io\.popen' \
              "$SRC"/experiments "$SRC"/lib/lt)" ""

# a stored argument with shell syntax runs no command: freeze_deep.lua derives a folder from
# --model and used to `rm -rf` it through the shell
evil="m';touch injected;'"
"$LTRUN" model new --layers 1 --hidden 16 --heads 2 --kv-heads 1 --vocab 300 "$evil" >/dev/null 2>&1
# (an empty corpus folder stops it at packing: a missing one would stop it at its args)
mkdir -p empty_corpus
"$LTRUN" "$SRC/experiments/freeze_deep/freeze_deep.lua" "--model=$evil" --corpus=empty_corpus >/dev/null 2>err.txt
check "first run: the study ran up to the corpus" contains "$(cat err.txt)" "folder empty_corpus holds no files"
check "first run: no command ran" equals "$(ls injected 2>/dev/null)" ""
id=$(sql1 "select max(id) from runs where parent_id is null")
"$LTRUN" rerun "$id" --yes >/dev/null 2>err.txt
check "rerun: the study ran again" contains "$(cat err.txt)" "folder empty_corpus holds no files"
check "rerun: no command ran" equals "$(ls injected 2>/dev/null)" ""

# pretrain_tiny.lua --out=DIR must not delete a user's DIR (nor DIR.work)
mkdir -p mine.work && echo precious > mine.work/notes.txt
"$LTRUN" "$SRC/experiments/pretrain_tiny/pretrain_tiny.lua" --out=mine >/dev/null 2>err.txt; rc=$?
check "pretrain_tiny: a user's folder is refused (exit 1)" equals "$rc" "1"
check "pretrain_tiny: the refusal is named" contains "$(cat err.txt)" "refusing to delete a folder that ltrun did not create"
check "pretrain_tiny: the user's file is kept" equals "$(cat mine.work/notes.txt)" "precious"
finish
