#!/usr/bin/env bash
# Installs StrataCL into a temporary prefix, then builds the README example against it twice:
# with find_package(StrataCL) (shared library) and with pkg-config, and runs both on 2 ranks.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mkdir -p "$tmp/app"
cp "$src/examples/allreduce.c" "$tmp/app/"
cat >"$tmp/app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(StrataCL REQUIRED)
add_executable(consumer allreduce.c)
target_link_libraries(consumer PRIVATE StrataCL::stratacl)
CMAKE
cmake -S "$tmp/app" -B "$tmp/app/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/app/build" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/prefix/bin/stratarun" -n 2 "$tmp/app/build/consumer"

libdir=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -1)
flags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs stratacl)
# shellcheck disable=SC2086
cc -o "$tmp/pc_consumer" "$src/examples/allreduce.c" $flags
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/prefix/bin/stratarun" -n 2 "$tmp/pc_consumer"
echo "install: find_package and pkg-config consumers built and ran"

# The Python package, when this build made it: importable from the prefix, numpy and torch.
if ls "$build"/python/stratacl/_core.*.so >/dev/null 2>&1; then
  export PYTHONPATH="$tmp/prefix/lib/python3/dist-packages"
  /usr/bin/python3 -m stratacl.info | grep -q "copy model"
  cat >"$tmp/py_allreduce.py" <<'PY'
import numpy as np, stratacl
comm = stratacl.Comm.from_env()
x = stratacl.empty(1000, np.float32)
x[:] = comm.rank + 1
comm.allreduce(x, x)
assert (x == sum(range(1, comm.size + 1))).all(), x[:4]
PY
  "$tmp/prefix/bin/stratarun" -n 2 /usr/bin/python3 "$tmp/py_allreduce.py"
  if ls "$build"/python/stratacl/_torch.*.so >/dev/null 2>&1; then
    /usr/bin/python3 -c "import torch.distributed as d, stratacl.torch; assert 'STRATACL' in d.Backend._plugins"
  fi
  echo "install: the Python package imports from the prefix and runs"
fi
