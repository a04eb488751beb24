#!/usr/bin/env bash
# Fails if any C or C++ file of the tree differs from clang-format's output (.clang-format:
# Google style, 100 columns). Fix with: scripts/check-format.sh --fix
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.cc' '*.h' '*.hpp')
else
  mapfile -t files < <(find include src tools tests bench examples -name '*.c' -o -name '*.cc' \
                         -o -name '*.h' -o -name '*.hpp')
fi
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
clang-format --dry-run -Werror "${files[@]}"
echo "check-format: ${#files[@]} files formatted"
