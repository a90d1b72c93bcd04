# scripts/gpu-check.d/env.sh (scripts/gpu-node-debs copies it to .device/env.sh). On the GPU node,
# in the project root: source .device/env.sh (scripts/gpu-check does). It
# unpacks the Debian packages into /tmp/deps (never into /) and points CMake,
# pkg-config and the loader at them and at the LibTorch inside the machine's PyTorch.
deps=/tmp/deps
if [ ! -f $deps/.done ]; then
  mkdir -p $deps
  for f in .device/debs/*.deb; do dpkg -x "$f" $deps; done
  touch $deps/.done
fi
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export PKG_CONFIG_SYSROOT_DIR=$deps
export PKG_CONFIG_PATH=$deps/usr/lib/x86_64-linux-gnu/pkgconfig:$deps/usr/share/pkgconfig
export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu:$TORCH_LIB:${LD_LIBRARY_PATH:-}
export CPATH=$deps/usr/include:$deps/usr/include/luajit-2.1:${CPATH:-}
export LT_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=$TORCH_PREFIX;$deps/usr -DCMAKE_CUDA_ARCHITECTURES=90"
echo "deps in $deps; torch $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda)'); nvcc $(nvcc --version | tail -1)"
