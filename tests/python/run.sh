#!/usr/bin/env bash
# Runs one Python test on N ranks under stratarun, with the build tree's package importable and
# a fresh rendezvous directory of its own, which is also the temporary directory (TMPDIR): a
# run that leaves a file of ours there (a workload's file store, stratacl-*) fails.
#   run.sh STRATARUN BUILD_PYTHON_DIR RANKS SCRIPT [ARGS...]
set -euo pipefail
stratarun=$1 pydir=$2 ranks=$3 script=$4
shift 4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/tmp"
export TMPDIR="$dir/tmp"
export PYTHONPATH="$pydir:$(dirname "$script")${PYTHONPATH:+:$PYTHONPATH}"
export STRATACL_TEST_DIR="$dir"
"$stratarun" -n "$ranks" --timeout 600 ${STRATARUN_ARGS:-} /usr/bin/python3 "$script" "$@"
left=$(find "$dir/tmp" -maxdepth 1 -name 'stratacl-*')
[ -z "$left" ] || { echo "run.sh: left in the temporary directory: $left" >&2; exit 1; }
