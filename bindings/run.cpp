// bindings/run.cpp: lt.run, the current run (runtime/store/script.h; child runs are built in
// Lua, lib/lt/init.lua, on _begin_child/_end). Also os.exit, which closes the runs before the
// process ends.
#include <cstdio>
#include <cstdlib>

#include "bindings/luat.h"
#include "runtime/store/script.h"
#include "runtime/store/session.h"

namespace ltrun::lua {
namespace {

// os.exit([code[, close]]) as in Lua, but the runs of this process end first: buffered rows
// are written and every open run closes, `ok` for code 0 / true / none, else `failed`.
// (LuaJIT's own os.exit calls exit() directly, losing the buffer and leaving the run open.)
int l_exit(lua_State* L) {
  int code = EXIT_SUCCESS;
  if (lua_isboolean(L, 1)) code = lua_toboolean(L, 1) ? EXIT_SUCCESS : EXIT_FAILURE;
  else if (!lua_isnoneornil(L, 1)) code = int(check_integer(L, 1, "os.exit"));
  if (store::Session* s = run_context(L).session) {
    const auto errors = s->end_all(code == 0 ? store::Status::ok : store::Status::failed,
                                   code == 0 ? "" : fmt::format("os.exit({})", code));
    for (const auto& e : errors) std::fprintf(stderr, "ltrun: closing the run at os.exit failed: %s\n", e.c_str());
    if (!errors.empty() && code == 0) code = EXIT_FAILURE;
  }
  std::fflush(nullptr);
  std::exit(code);
}

}  // namespace

void register_run(lua_State* L) {
  new_module(L, "run");
  set_script_funcs(L, store::script_functions());
  lua_pop(L, 1);
  lua_getglobal(L, "os");
  lua_pushcfunction(L, LT_FN(l_exit));
  lua_setfield(L, -2, "exit");
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
