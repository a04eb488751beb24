#!/usr/bin/env bash
# Installs every Debian package the build, tests and tools need (or, given arguments, exactly
# those packages: scripts/setup-peers.sh uses that). Idempotent: packages already present are
# left alone, and apt is not touched at all when nothing is missing.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config   # build
  libgtest-dev                       # unit tests
  procps                             # pgrep in fault tests
  clang libclang-rt-14-dev           # libFuzzer targets; the clang build of the user build check
  clang-format                       # scripts/check-format.sh
  python3-dev pybind11-dev python3-numpy   # the Python package (python/)
  python3-torch libtorch-dev               # its torch.distributed backend, and the tests' gloo
  libfabric-dev libfabric-bin              # the network between hosts (src/net), fi_info
  iproute2                                 # network namespaces: the tests' "hosts"
  libopenblas0-pthread                     # an optimised BLAS: torch uses it through the alternatives
)

if [ $# -gt 0 ]; then packages=("$@"); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
