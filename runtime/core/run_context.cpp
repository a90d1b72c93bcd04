// runtime/core/run_context.cpp: seed streams (see run_context.h).
#include "runtime/core/run_context.h"

namespace ltrun {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

uint64_t stream_seed(uint64_t run_seed, std::string_view stream) {
  // the name's hash goes through splitmix64 with the seed, so seeds 1 and 2 (or two names
  // that differ in one letter) give unrelated streams; masked so a Lua double holds it
  return splitmix64(splitmix64(run_seed) ^ fnv1a(stream)) & (kSeedLimit - 1);
}

}  // namespace ltrun
