# tests/cli/replay_sandbox.sh: a run from someone else is untrusted code (issue 34). Its
# script, replayed with `rerun --sandbox` in the importer's checkout, tries the host: it
# appends to .git/config (a core.fsmonitor command that git would run) and to a file of the
# checkout, writes the store file, remounts its read-only model writable (as root bwrap keeps
# capabilities unless told), reads /etc/shadow, ~/.bashrc and a file of the home. After
# the replay nothing of the host changed, every read failed, the new run is in the user's
# store with its rows (and nothing else was merged), and the mounts were listed before it
# started. Without --sandbox and without --yes (no terminal) it refuses and says unsandboxed.
# Skips (exit 77) where bwrap cannot make namespaces.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/common.bash"
unset LTRUN_MODELS LTRUN_DATA
skip_without_bwrap
export LTRUN_LIB=$SRC/lib
export HOME=$SCRATCH/home TMPDIR=$SCRATCH/tmp  # a home and a temporary folder of the test's own
mkdir -p A "$HOME" "$TMPDIR"
printf 'alias ls=true\n' > "$HOME/.bashrc"
printf 'the key\n' > "$HOME/secret.txt"
B=$SCRATCH/B  # the importer's checkout (made after the author ran: the author's run finds none of it)

cat > A/hostile.lua <<LUA
local m = lt.model.load("models/tiny")  -- a declared input: mounted read-only
lt.run.log("model_layers", m.n_layers)
local function append(p)
  local f = io.open(p, "a")
  if not f then return 0 end
  f:write("[core]\n\tfsmonitor = \"touch $SCRATCH/pwned\"\n")
  f:close()
  return 1
end
local function read(p)
  local f = io.open(p, "r")
  if not f then return 0 end
  local s = f:read("*a") or ""
  f:close()
  lt.run.param("read:" .. p, s)
  return 1
end
lt.run.log("append_git_config_cwd", append(".git/config"))
lt.run.log("append_git_config_abs", append("$B/.git/config"))
lt.run.log("append_checkout_file", append("$B/notes.txt"))
lt.run.log("append_store_file", append("$B/ltrun.db"))
lt.run.log("read_shadow", read("/etc/shadow"))
lt.run.log("read_passwd", read("/etc/passwd"))
lt.run.log("read_bashrc_env_home", read((os.getenv("HOME") or "/nonexistent") .. "/.bashrc"))
lt.run.log("read_bashrc", read("$HOME/.bashrc"))
lt.run.log("read_home_file", read("$HOME/secret.txt"))
local function succeeds(cmd)
  local p = io.popen(cmd .. " >/dev/null 2>&1 && echo ok")
  local s = p:read("*a") or ""
  p:close()
  return s:find("ok") and 1 or 0
end
if os.getenv("LTRUN_SANDBOXED") then  -- the replay (the author's run leaves its model alone)
  lt.run.log("remount_model_rw", succeeds("mount -o remount,bind,rw models/tiny"))
  lt.run.log("append_model_file", append("models/tiny/config.json"))
  lt.run.log("nested_user_namespace", succeeds("unshare -U true"))
  -- ptrace of its own child: same user, a descendant; only the seccomp filter refuses it
  lt.run.log("ptrace_own_child", succeeds("python3 -c 'import ctypes, subprocess, sys; "
    .. "p = subprocess.Popen([\"sleep\", \"30\"]); r = ctypes.CDLL(None).ptrace(16, p.pid, 0, 0); "
    .. "p.kill(); sys.exit(0 if r == 0 else 1)'"))
end
local w = io.open("made_here.txt", "w")
lt.run.log("write_workdir", w and 1 or 0)
if w then w:close() end
LUA
cd A
"$LTRUN" model new models/tiny --layers 2 --hidden 32 >/dev/null
LTRUN_DB=$SCRATCH/A/runs.db "$LTRUN" hostile.lua >/dev/null 2>&1
LTRUN_DB=$SCRATCH/A/runs.db "$LTRUN" export 1 -o "$SCRATCH/run.ltrun" >/dev/null
check "the author's run is exported" equals "$([ -s "$SCRATCH/run.ltrun" ] && echo yes)" "yes"
cd ..

mkdir -p "$B/.git"
printf '[core]\n\trepositoryformatversion = 0\n' > "$B/.git/config"
printf 'my notes\n' > "$B/notes.txt"
cp -r A/models "$B/"
cp run.ltrun "$B/"
cd "$B"
export LTRUN_DB=$B/ltrun.db
state() {  # every file of the checkout (but the store) and of the home, with its hash; and the probe
  (cd "$B" && find . -path ./ltrun.db -prune -o -path './ltrun.db-*' -prune -o -type f -print0 | sort -z | xargs -0 sha256sum)
  (cd "$HOME" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
  ls "$SCRATCH/pwned" 2>/dev/null
}
before=$(state)

# --- without --sandbox, without --yes and without a terminal: refused, saying unsandboxed
err=$("$LTRUN" rerun run.ltrun </dev/null 2>&1); rc=$?
check "without --sandbox and --yes, no terminal: refused (exit 2)" equals "$rc" "2"
check "the refusal says it would run unsandboxed" contains "$err" "UNSANDBOXED, with the full rights of this user"
check "the refusal names --sandbox" contains "$err" "--sandbox"
orig=$(sqlite3 ltrun.db "select id from runs where rerun_of is null")
check "the import happened, the replay did not" equals "$(sqlite3 ltrun.db "select count(*) from runs")" "1"

# --- rerun --sandbox: the replay sees none of it
out=$("$LTRUN" rerun run.ltrun --sandbox </dev/null 2>&1); rc=$?
echo "$out" | sed 's/^/  | /' >&2
check "rerun --sandbox runs (exit 0)" equals "$rc" "0"
check "it lists the mounts before it starts" contains "$out" "in a sandbox (bubblewrap): no network, no home, nothing of this machine but:"
check "the list names the system folders, read-only" contains "$out" "read-only  /usr  (system programs and libraries)"
check "the list names the fresh working folder, in memory" contains "$out" ": its working folder, empty (its current folder and HOME; "
check "the list names its own store, writable" contains "$out" "(its own store, holding only the run it replays)"
check "the list names the model's files, read-only, as recorded" contains "$out" "read-only  $B/models/tiny/config.json at "
check "the model is mounted because its content is as recorded" contains "$out" "(model models:tiny (as recorded), file config.json)"
nfiles=$(find "$B/models/tiny" -maxdepth 1 -type f ! -name '.*' | wc -l)
check "nothing of the checkout is listed but the model's files" equals "$(grep -c "  $B[/ ]" <<<"$out" | tr -d ' ')" "$nfiles"
check "the home is not listed" equals "$(grep -c "  $HOME" <<<"$out")" "0"
check "the host is as it was (checkout, .git/config, home; no fsmonitor probe)" equals "$(state)" "$before"
new=$(sqlite3 ltrun.db "select id from runs where rerun_of = $orig")
check "one new run, a rerun of the imported one" equals "$(sqlite3 ltrun.db "select count(*) from runs where rerun_of = $orig")" "1"
check "nothing else was merged" equals "$(sqlite3 ltrun.db "select count(*) from runs")" "2"
m() { sqlite3 ltrun.db "select value from metrics where run_id = $new and name = '$1'"; }
check "the replay read its model (mounted read-only)" equals "$(m model_layers)" "2.0"
check "its rows are in the user's store" equals "$(sqlite3 ltrun.db "select count(*) from metrics where run_id = $new")" "15"
for k in append_git_config_cwd append_git_config_abs append_checkout_file append_store_file remount_model_rw \
         append_model_file nested_user_namespace ptrace_own_child; do
  check "$k: failed in the sandbox" equals "$(m $k)" "0.0"
done
for k in read_shadow read_passwd read_bashrc_env_home read_bashrc read_home_file; do
  check "$k: failed in the sandbox" equals "$(m $k)" "0.0"
done
check "no file of the host was read into the run's params" equals \
  "$(sqlite3 ltrun.db "select count(*) from params where run_id = $new and key like 'read:%'")" "0"
check "its working folder is writable" equals "$(m write_workdir)" "1.0"
check "recorded as sandboxed" contains "$(sqlite3 ltrun.db "select value from params where run_id = $new and key = 'rerun.sandbox'")" "bubblewrap"
check "the outer ltrun compares it with the original" contains "$out" "ltrun rerun: run $new against run $orig: not reproduced: "
check "the private folder is removed" equals "$(ls "$TMPDIR")" ""
check "the author's reads succeeded where they ran (so the zeros above are the sandbox's)" equals \
  "$(sqlite3 ltrun.db "select value from metrics where run_id = $orig and name = 'read_home_file'")" "1.0"

# --- the replay's store is the replayed code's to write: only its new run is merged, after
# checks; a forged run, a stolen uuid or a store replaced by a link merge nothing
victim=$(sqlite3 ltrun.db "select uuid from runs where id = $orig")
forge() {  # forge MODE: a run whose script, replayed, does MODE to the store it was given (--db)
  cat > "forge_$1.lua" <<LUA
local f = io.open("/proc/self/cmdline", "rb")
local cmd = f and f:read("*a") or ""
if f then f:close() end
local args, store = {}, nil
for a in cmd:gmatch("[^%z]+") do args[#args + 1] = a end
for i, a in ipairs(args) do if a == "--db" then store = args[i + 1] end end
if not store or not store:find("ltrun%-replay") then return end  -- the original run: nothing
if "$1" == "uuid" then  -- a child run that claims the uuid of a run of the user's store
  lt.run.child("kid", function() lt.run.log("k", 1) end)
  os.execute("sqlite3 " .. store .. " \"update runs set uuid = '$victim' where name = 'kid'\"")
elseif "$1" == "top" then  -- a second top run, also a rerun of the seeded one
  os.execute("sqlite3 " .. store .. " \"insert into runs(name, rerun_of, started_at, status, uuid) values ('forged', 1, '2020-01-01', 'ok', 'f1')\"")
elseif "$1" == "link" then  -- the store replaced by a link to another file (its bind holds)
  os.execute("rm -f " .. store .. " && ln -s /usr/share/doc " .. store)
  lt.run.child("kid", function() lt.run.log("k", 1) end)  -- and then steals a uuid, refused as above
  os.execute("sqlite3 " .. store .. " \"update runs set uuid = '$victim' where name = 'kid'\"")
elseif "$1" == "view" then  -- its runs turned into a view that never ends (read as data: refused)
  os.execute("sqlite3 " .. store .. " \"alter table runs rename to r; create view runs as with recursive n(i) as "
    .. "(select 1 union all select i + 1 from n) select r.* from r, n\"")
end
LUA
  "$LTRUN" "forge_$1.lua" >/dev/null 2>&1
  local id n
  id=$(sqlite3 ltrun.db "select max(id) from runs")
  n=$(sqlite3 ltrun.db "select count(*) from runs")
  err=$("$LTRUN" rerun "$id" --sandbox 2>&1); rc=$?
  check "forged ($1): refused (exit 2)" equals "$rc" "2"
  check "forged ($1): nothing merged" equals "$(sqlite3 ltrun.db "select count(*) from runs")" "$n"
  check "forged ($1): the victim run untouched" equals "$(sqlite3 ltrun.db "select count(*) from runs where uuid = '$victim'")" "1"
}
forge uuid
check "a stolen uuid: named" contains "$err" "the replay's store names a run uuid '$victim' that $B/ltrun.db already holds"
forge top
check "a second top run: named" contains "$err" "the replay's store holds 2 new top runs, where a replay makes one"
forge link
check "a store replaced by a link: it could not be (a bind), and the stolen uuid is named" contains "$err" \
  "the replay's store names a run uuid '$victim' that $B/ltrun.db already holds"
forge view
check "a store whose runs became a view: refused as data, at once" contains "$err" \
  "not an ltrun store as ltrun writes it: it has a view runs (a store holds tables, never views) (schema version"
check "no private folder left behind" equals "$(ls "$TMPDIR")" ""
finish
