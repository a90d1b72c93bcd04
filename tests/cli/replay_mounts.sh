# tests/cli/replay_mounts.sh: `rerun --sandbox` mounts exactly what was hashed (issue 43 item
# 3). A model folder's hash covers its top-level, non-hidden files; the replayed script tries
# to read the folder's hidden file and a file of a sub-folder (which the importer keeps there
# and the hash never saw), and to list the folder: it sees the model's files only. A model
# folder that holds key material (.ssh/id_rsa) is not mounted at all, whatever $HOME says
# (unset here, or elsewhere): it is named in the list with the reason, and the replay cannot
# read it. Skips (exit 77) where bwrap cannot make namespaces.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/common.bash"
unset LTRUN_MODELS LTRUN_DATA
skip_without_bwrap
export LTRUN_LIB=$SRC/lib TMPDIR=$SCRATCH/tmp
mkdir -p A "$TMPDIR"
cat > A/peek.lua <<'LUA'
local m = lt.model.load("models/tiny")
lt.run.log("model_layers", m.n_layers)
local function read(p)
  local f = io.open(p, "r")
  if not f then return 0 end
  local s = f:read("*a") or ""
  f:close()
  lt.run.param("read:" .. p, s)
  return 1
end
lt.run.log("read_hidden", read("models/tiny/.secret"))
lt.run.log("read_subfolder", read("models/tiny/ck/secret"))
lt.run.log("read_key", read("models/keyed/.ssh/id_rsa"))
local n = 0
for _ in io.popen("ls -A models/tiny 2>/dev/null"):lines() do n = n + 1 end
lt.run.log("entries_seen", n)
pcall(lt.model.load, "models/keyed")  -- the author's run loads it; the replay finds none
LUA
cd A
"$LTRUN" model new models/tiny --layers 2 --hidden 32 >/dev/null
"$LTRUN" model new models/keyed --layers 2 --hidden 32 >/dev/null
LTRUN_DB=$SCRATCH/A/runs.db "$LTRUN" peek.lua >/dev/null 2>&1
LTRUN_DB=$SCRATCH/A/runs.db "$LTRUN" export 1 -o "$SCRATCH/run.ltrun" >/dev/null
check "the author's run read both models" equals "$(sqlite3 runs.db "select count(*) from run_inputs where kind = 'model'")" "2"
nfiles=$(find models/tiny -maxdepth 1 -type f ! -name '.*' | wc -l)
cd ..

# the importer's folder: the same models, and beside them what the hashes never covered
B=$SCRATCH/B
mkdir -p "$B"
cp -r A/models "$B/"
printf 'hidden\n' > "$B/models/tiny/.secret"
mkdir -p "$B/models/tiny/ck" "$B/models/keyed/.ssh"
printf 'in a sub-folder\n' > "$B/models/tiny/ck/secret"
printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----\n' > "$B/models/keyed/.ssh/id_rsa"
cd "$B"
export LTRUN_DB=$B/ltrun.db
out=$(env -u HOME "$LTRUN" rerun "$SCRATCH/run.ltrun" --sandbox </dev/null 2>&1); rc=$?
echo "$out" | sed 's/^/  | /' >&2
orig=$(sqlite3 ltrun.db "select id from runs where rerun_of is null")
new=$(sqlite3 ltrun.db "select id from runs where rerun_of = $orig")
m() { sqlite3 ltrun.db "select value from metrics where run_id = $new and name = '$1'"; }
check "the replay ran and was merged" equals "$([ -n "$new" ] && echo yes)" "yes"
check "it read its model" equals "$(m model_layers)" "2.0"
check "the model's hidden file is not there" equals "$(m read_hidden)" "0.0"
check "a file of the model's sub-folder is not there" equals "$(m read_subfolder)" "0.0"
check "the folder holds the model's files and nothing else" equals "$(m entries_seen)" "$nfiles.0"
check "the folder with key material: not read" equals "$(m read_key)" "0.0"
check "no file of the host was read into the run's params" equals \
  "$(sqlite3 ltrun.db "select count(*) from params where run_id = $new and key like 'read:%'")" "0"
check "each file of the model is listed, one bind each" equals "$(grep -c "(model models:tiny (as recorded), file " <<<"$out")" "$nfiles"
check "the folder with key material is not mounted, and why" contains "$out" \
  "not mounted: model models:keyed (holds key material: .ssh)"
check "the private folder is removed" equals "$(ls "$TMPDIR")" ""
finish
