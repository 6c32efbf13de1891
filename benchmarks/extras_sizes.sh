#!/bin/bash
# The size of a fresh virtual environment with pycert and each extra alone (docs/install.md, README's
# Install table): `du -sm` of the venv, pip's own 24 MB included, and how many packages it holds.
#   benchmarks/extras_sizes.sh [CHECKOUT]   (default: this checkout; needs network to PyPI or pip's cache)
set -u
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
for extra in "" fast plot prove ray leak browser; do
  d=$(mktemp -d)/venv
  python3 -m venv "$d" && "$d/bin/pip" install -q --upgrade pip >/dev/null 2>&1
  spec=$repo; [ -n "$extra" ] && spec="$repo[$extra]"
  if "$d/bin/pip" install -q "$spec" >/dev/null 2>&1; then
    echo "${extra:-none} $(du -sm "$d" | cut -f1) MB, $("$d/bin/pip" list 2>/dev/null | tail -n +3 | wc -l) packages"
  else
    echo "${extra:-none} failed to install"
  fi
  rm -rf "$(dirname "$d")"
done
