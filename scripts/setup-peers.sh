#!/usr/bin/env bash
# Installs the Debian packages of the peer libraries bench/compare measures StrataCL against:
# Open MPI, MPICH, Gloo, PyTorch (torch.distributed with the gloo backend) and gnuplot for the
# plots, through scripts/setup.sh (idempotent: apt is not touched when nothing is missing).
set -euo pipefail

packages=(
  g++ pkg-config                       # peer programs are built with the system compiler
  openmpi-bin libopenmpi-dev           # mpicc.openmpi, mpirun.openmpi
  mpich libmpich-dev                   # mpicc.mpich, mpirun.mpich
  libgloo-dev                          # gloo headers and libgloo (TCP transport)
  python3 python3-torch                # torch.distributed, gloo backend, under /usr/bin/python3
  gnuplot-nox                          # headless plots (pngcairo terminal)
)

exec "$(dirname "$0")/setup.sh" "${packages[@]}"
