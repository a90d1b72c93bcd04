// runtime/core/run_context.h: the run a piece of code works for: its seed (and the named seed
// streams derived from it), its device and dtype, where its metrics go (the sink: the current
// run of the store), and the store session behind it. The command line makes one per run
// (runtime/cli/run_script.cpp); the interpreter keeps one per lua_State and every binding reads it
// from there (bindings/luat.h: run_context(L)), so nothing reads a Lua global back.
//
// Seed streams: every seeded thing (data order, packing, sampling, evaluation subsets, model
// init, prompt selection) takes ctx.seed("its stream"), so `--seed` changes all of them and the
// same seed repeats them, while two streams of one run are unrelated. kSeedStreams below lists
// every stream the runtime and lib/ + experiments/ take (tests/lua/seed_streams.lua greps the
// sources for them, so a new stream fails that test until it is listed here).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ltrun::store {
class Session;
}

namespace ltrun {

// One scored benchmark item (the store's eval_items row). prompt and output: the text given
// and generated ("" for none: stored as NULL), each at most kEvalTextBytes (eval::log_result cuts).
struct EvalRecord {
  std::string bench, item_id, category, protocol, prediction, answer;
  std::optional<bool> correct;
  std::string prompt, output;
};

// What code writes to "the current run". Every member writes to the innermost open run at the
// time of the call (a child run while one is open).
class RunSink {
 public:
  virtual ~RunSink() = default;
  virtual int64_t run_id() const = 0;  // the innermost open run
  virtual void metric(const std::string& name, double value, std::optional<int64_t> step = std::nullopt) = 0;
  virtual void layer_metric(const std::string& name, int64_t layer, const std::string& grp, double value,
                            std::optional<int64_t> step = std::nullopt) = 0;
  virtual void param(const std::string& key, const std::string& value) = 0;
  virtual void eval_item(const EvalRecord& e) = 0;
  // Registers a file as an artifact of the run (kind: "" = from its extension); returns the
  // path stored (runtime/store/artifact.h says which files are taken).
  virtual std::string artifact(const std::string& path, const std::string& kind) = 0;
  virtual void flush() = 0;  // what was written so far is durable
};

// The largest integer below which a Lua number (a double) holds every integer exactly.
constexpr uint64_t kSeedLimit = uint64_t(1) << 53;

// splitmix64's finaliser: a well-mixed 64-bit value of x (stream seeds, per-row sampling draws)
uint64_t splitmix64(uint64_t x);

// A well-mixed seed < 2^53 for stream `stream` of run seed `run_seed`: splitmix64 of the run
// seed combined with the FNV-1a hash of the name. Deterministic across hosts and builds.
uint64_t stream_seed(uint64_t run_seed, std::string_view stream);

// The seed streams (defaults of the `seed =` options, which still override). lt.run.seed(NAME, I)
// is the I-th seed of a stream (one per batch, repeat, ...), not an arithmetic on its seed.
inline constexpr const char* kSeedStreams[] = {
    "data.pack",     // lt.data.pack: which documents go to validation
    "data.windows",  // lt.data.windows: window order
    "train.order",   // lt.train.causal_lm: data order (windows of a corpus folder)
    "model.init",    // lt.model.new, lt.model.hybrid: fresh weights
    "eval",          // lt.eval.score: sampled answers (samples > 1, temperature > 0)
    "generate",      // model:generate: sampling
    "rl.rollout",    // lt.rl.rollout: sampling
    "rl.prompts",    // lt.rl.prompts: the n-item subset
    "rl.grpo",       // lt.rl.grpo: prompt subsets, prompt order and rollout sampling
    // taken in Lua (lt.run.seed(NAME)):
    "eval.subset",   // lt.scan.task: the scan's sample of benchmark items, the same in every job
    "eval.repeat",   // lt.scan.task (code, agent too): repeat I's item sample and sampled answers
    "tasks.items",   // lt.tasks.load: which items of a source (antonym pairs)
    "tasks.math",    // lt.models.tiny_math: the made-up arithmetic documents
    "tasks.code",    // lt.models.tiny_code: the code documents and their split
    "tasks.agent",   // lt.models.tiny_agent: the demonstration episodes
};

struct RunContext {
  uint64_t seed = 1;            // the run's seed (--seed; 1 by default)
  std::string device = "cpu";   // the --device choice, resolved (cpu, cuda:0)
  std::string dtype = "float32";
  RunSink* sink = nullptr;            // nullptr: no run store (nothing is logged)
  store::Session* session = nullptr;  // the runs of this process (child runs, queries, leases)

  uint64_t stream(std::string_view name) const { return stream_seed(seed, name); }
  // the active run, or nullopt without a store
  std::optional<int64_t> run_id() const {
    return sink ? std::optional<int64_t>(sink->run_id()) : std::nullopt;
  }
};

}  // namespace ltrun
