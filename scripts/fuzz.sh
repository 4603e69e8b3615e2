#!/usr/bin/env bash
# Run every fuzz target of the module for FUZZTIME each (default 5s).
# go test accepts one -fuzz target per package per run, hence the loop.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime=${FUZZTIME:-5s}
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
  pkg=./$(dirname "${f#./}")
  for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
    echo "fuzz: $pkg $target ($fuzztime)"
    # The generated corpus lives in GOCACHE; a failing input is written to
    # the package's testdata/fuzz, where it becomes a regression test.
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg" >/tmp/fuzz.$$.log 2>&1 || {
      cat /tmp/fuzz.$$.log; rm -f /tmp/fuzz.$$.log; exit 1; }
    tail -n 1 /tmp/fuzz.$$.log
  done
done
rm -f /tmp/fuzz.$$.log
