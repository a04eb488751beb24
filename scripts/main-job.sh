#!/usr/bin/env bash
# The main job: install what is missing, build, then sweep every collective on 4 ranks with
# every element checked, for heap (zero-copy) and malloc (staged) buffers.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$root/build"
bin="$root/build/tools"
for mem in heap malloc; do
  echo "== scl-bench all, 4 ranks, --mem $mem =="
  "$bin/stratarun" -n 4 --timeout 900 "$bin/scl-bench" all -b 8 -e 64M -f 4 -c 1 --mem "$mem"
done
