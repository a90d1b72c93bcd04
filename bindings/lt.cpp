// bindings/lt.cpp: the table of contents of the Lua API. open_lt builds the global `lt`
// from one register_X per binding file, then lib/lt/init.lua adds the Lua-side parts.
#include "bindings/lt.h"

#include "bindings/json.h"
#include "bindings/luat.h"
#include "bindings/tensor.h"
#include "runtime/core/device.h"

namespace ltrun::lua {

void register_run(lua_State* L);     // bindings/run.cpp: lt.run
void register_model(lua_State* L);   // bindings/model.cpp: lt.model, lt.Model, lt.tokenizer
void register_eval(lua_State* L);    // bindings/eval.cpp: lt.eval
void register_stats(lua_State* L);   // bindings/stats.cpp: lt.stats (ranks, correlations, Jaccard)
void register_proc(lua_State* L);    // bindings/proc.cpp: lt.proc (child processes from argv arrays)
void register_system(lua_State* L);  // bindings/system.cpp: lt.device, versions
void register_diag(lua_State* L);    // bindings/diag.cpp: lt.diag (TP, LS, S(b), JS)
void register_data(lua_State* L);  // bindings/data.cpp: lt.data (pack, info, windows)
void register_train(lua_State* L);   // bindings/train.cpp: lt.train, lt.layers (m:freeze: model.cpp)
void register_rl(lua_State* L);      // bindings/rl.cpp: lt.rl (rollouts, rewards, GRPO losses)
void register_fs(lua_State* L);      // bindings/fs.cpp: lt.fs (mkdir, remove, list; no shell)

void register_dist(lua_State* L);    // bindings/dist.cpp: lt.dist (ranks, collectives)
void register_sandbox(lua_State* L); // bindings/sandbox.cpp: lt.sandbox (Python in bubblewrap)

void open_lt(lua_State* L) {
  lua_newtable(L);
  lua_setglobal(L, "lt");
  register_system(L);
  register_tensor(L);
  register_json(L);
  register_run(L);
  register_model(L);
  register_eval(L);
  register_stats(L);
  register_proc(L);
  register_diag(L);
  register_data(L);
  register_train(L);
  register_rl(L);
  register_fs(L);
  register_dist(L);
  register_sandbox(L);
}

}  // namespace ltrun::lua
