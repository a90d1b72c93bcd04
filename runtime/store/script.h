// runtime/store/script.h: the C++ half of lt.run (bindings/run.cpp registers these; the Lua half,
// lt.run.child, is lib/lt/init.lua), the current run
// (the run context, runtime/core/run_context.h): seed (the run's seed and its named streams),
// id, root, param, log, log_layers, artifact, query (SQL or a named query "@NAME"), flush,
// take_lease / release_lease (a scan's jobs), and _begin_child / _end, on which lib/lt/init.lua
// builds child runs.
#pragma once
#include <string>
#include <vector>

#include "runtime/core/options.h"

namespace ltrun::store {

const std::vector<ScriptFunction>& script_functions();

// A script value as text for the run store: numbers as %.17g-shortest, booleans true/false,
// strings raw, nil "", tables as JSON.
std::string value_text(const ltrun::Value& v);

}  // namespace ltrun::store
