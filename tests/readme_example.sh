#!/usr/bin/env bash
# The README's example must be examples/allreduce.c, byte for byte (that file is what the tests
# build and run): readme_example.sh README EXAMPLE
set -euo pipefail
block=$(awk '/^```c$/ {on=1; next} /^```$/ {if (on) exit} on' "$1")
if [ "$block" != "$(cat "$2")" ]; then
  diff <(printf '%s\n' "$block") "$2" || true
  echo "readme_example.sh: the README's C block differs from $2"
  exit 1
fi
echo "readme_example.sh: the README shows $2 exactly"
