// bindings/fs.cpp: lt.fs, folders for studies without a shell (runtime/core/fs.h):
// lt.fs.mkdir(path) (mkdir -p; folders it makes carry the .ltrun-owned marker) → created?,
// lt.fs.remove(path) (a folder and its contents, only when ltrun made it or it is empty) →
// removed?, lt.fs.list(path) → sorted names, lt.fs.exists(path), lt.fs.is_dir(path).
#include <lua.hpp>

#include "bindings/luat.h"
#include "runtime/core/fs.h"

namespace ltrun::lua {
namespace {

int l_mkdir(lua_State* L) {
  lua_pushboolean(L, fs::make_dirs(check_string(L, 1, "lt.fs.mkdir")));
  return 1;
}

int l_remove(lua_State* L) {
  lua_pushboolean(L, fs::remove_dir(check_string(L, 1, "lt.fs.remove")));
  return 1;
}

int l_list(lua_State* L) {
  const auto names = fs::list(check_string(L, 1, "lt.fs.list"));
  lua_createtable(L, int(names.size()), 0);
  for (size_t i = 0; i < names.size(); i++) {
    push(L, names[i]);
    lua_rawseti(L, -2, int(i + 1));
  }
  return 1;
}

int l_exists(lua_State* L) {
  lua_pushboolean(L, fs::exists(check_string(L, 1, "lt.fs.exists")));
  return 1;
}

int l_is_dir(lua_State* L) {
  lua_pushboolean(L, fs::is_dir(check_string(L, 1, "lt.fs.is_dir")));
  return 1;
}

}  // namespace

void register_fs(lua_State* L) {
  new_module(L, "fs");
  static const luaL_Reg fns[] = {{"mkdir", LT_FN(l_mkdir)},   {"remove", LT_FN(l_remove)},
                                 {"list", LT_FN(l_list)},     {"exists", LT_FN(l_exists)},
                                 {"is_dir", LT_FN(l_is_dir)}, {nullptr, nullptr}};
  set_funcs(L, fns);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua
