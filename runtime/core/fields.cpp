// runtime/core/fields.cpp: checks on field lists (runtime/core/fields.h).
#include "runtime/core/fields.h"

#include <cstring>

namespace ltrun {

std::string duplicate_key(const std::vector<const char*>& keys) {
  for (size_t i = 0; i < keys.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (std::strcmp(keys[i], keys[j]) == 0) return keys[i];
  return "";
}

}  // namespace ltrun
