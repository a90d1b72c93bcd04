# tests/cli/libstdcxx_first.sh: ltrun and the tools built beside it load the C++ library they
# were compiled against before LibTorch. PyTorch 2.x wheels export copies of libstdc++'s
# std::filesystem (pytorch/pytorch#133437); with libtorch ahead of libstdc++ in an executable's
# NEEDED list the loader bound our std::filesystem::remove_all to libtorch's copy, which jumped
# to address 0 on a GPU node (every test that removed a folder crashed). CMakeLists.txt puts
# libstdc++ first in every link; this checks the executables' NEEDED order.
source "$(dirname "$0")/common.bash"
command -v readelf >/dev/null || { echo "readelf missing"; exit 77; }
order() {  # 'ok' when libstdc++ is needed before any libtorch*/libc10*, else the NEEDED list
  local needed
  needed=$(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  awk '/^libstdc\+\+/ { print "ok"; exit } /^lib(torch|c10)/ { bad = 1; exit } END { if (bad) exit 1 }' <<<"$needed" |
    grep -qx ok && echo ok || { echo "$needed" | tr '\n' ' '; }
}
for exe in "$LTRUN" "$(dirname "$LTRUN")"/ltrun_*; do  # the C++ tests link the same way
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  check "$(basename "$exe") loads libstdc++ before LibTorch" equals "$(order "$exe")" "ok"
done
finish
