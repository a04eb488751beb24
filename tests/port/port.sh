#!/usr/bin/env bash
# The porting rename (docs/PORTING.md): an NCCL source file becomes a StrataCL one.
# Usage: port.sh <nccl source> <output>
set -euo pipefail
sed -e 's/nccl/scl/g' -e 's/NCCL/SCL/g' -e 's/cudaStream/sclStream/g' "$1" > "$2"
