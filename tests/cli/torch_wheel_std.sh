# tests/cli/torch_wheel_std.sh: PyTorch 2.x wheels export copies of libstdc++'s std::filesystem
# (pytorch/pytorch#133437). On the first GPU node (an H200, torch 2.11, a GCC 13 that links
# libstdc++ statically) the linker bound our std::filesystem::remove_all to libtorch's copy,
# which jumped to address 0: every test and bench that removed a folder crashed. So:
#  1. no source calls std::filesystem::remove_all or recursive_directory_iterator
#     (ltrun::fs::remove_tree and ltrun::fs::walk do their work with POSIX calls);
#  2. where libstdc++ is a shared library of an executable, it comes before LibTorch in the
#     NEEDED list (CMakeLists.txt puts it first in every link), so the std:: symbols we use bind
#     to the C++ library we compiled against.
source "$(dirname "$0")/common.bash"
root=$(cd "$(dirname "$0")/../.." && pwd)
uses=$(cd "$root" && grep -rnE 'remove_all *\(|recursive_directory_iterator' runtime bindings tests experiments \
         --include='*.cpp' --include='*.h' --include='*.cu' | grep -vE '^[^:]+:[0-9]+: *//')
check "no std::filesystem::remove_all or recursive_directory_iterator in the sources" equals "$uses" ""
if command -v readelf >/dev/null; then
  for exe in "$LTRUN" "$(dirname "$LTRUN")"/ltrun_*; do  # the C++ tests link the same way
    [ -f "$exe" ] && [ -x "$exe" ] || continue
    needed=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    if ! grep -q '^libstdc++' <<<"$needed"; then
      echo "$(basename "$exe"): libstdc++ linked statically (not in NEEDED): the order does not apply"
      continue
    fi
    first=$(grep -m1 -E '^(libstdc\+\+|libtorch|libc10)' <<<"$needed")
    check "$(basename "$exe") loads libstdc++ before LibTorch" equals "$first" "libstdc++.so.6"
  done
else
  echo "readelf missing: the NEEDED order is not checked"
fi
finish
