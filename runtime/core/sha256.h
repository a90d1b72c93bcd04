// runtime/core/sha256.h: SHA-256 (FIPS 180-4) for script texts and artifacts.
#pragma once
#include <string>
#include <string_view>

namespace ltrun {

std::string sha256_hex(std::string_view data);
// Hash of a file's bytes; throws ltrun::Error naming the file if it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace ltrun
