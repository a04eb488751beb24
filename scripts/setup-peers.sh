#!/usr/bin/env bash
# Installs the Debian packages of the peer libraries bench/compare measures StrataCL against:
# Open MPI, MPICH, Gloo, PyTorch (torch.distributed with the gloo backend) and gnuplot for the
# plots. Idempotent, like scripts/setup.sh: packages already present are left alone, and apt is
# not touched at all when nothing is missing.
set -euo pipefail

packages=(
  g++ pkg-config                       # peer programs are built with the system compiler
  openmpi-bin libopenmpi-dev           # mpicc.openmpi, mpirun.openmpi
  mpich libmpich-dev                   # mpicc.mpich, mpirun.mpich
  libgloo-dev                          # gloo headers and libgloo (TCP transport)
  python3 python3-torch                # torch.distributed, gloo backend, under /usr/bin/python3
  gnuplot-nox                          # headless plots (pngcairo terminal)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup-peers: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
