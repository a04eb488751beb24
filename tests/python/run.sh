#!/usr/bin/env bash
# Runs one Python test on N ranks under stratarun, with the build tree's package importable and
# a fresh rendezvous directory of its own.
#   run.sh STRATARUN BUILD_PYTHON_DIR RANKS SCRIPT [ARGS...]
set -euo pipefail
stratarun=$1 pydir=$2 ranks=$3 script=$4
shift 4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export PYTHONPATH="$pydir:$(dirname "$script")${PYTHONPATH:+:$PYTHONPATH}"
export STRATACL_TEST_DIR="$dir"
exec "$stratarun" -n "$ranks" --timeout 600 ${STRATARUN_ARGS:-} /usr/bin/python3 "$script" "$@"
