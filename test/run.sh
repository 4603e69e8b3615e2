#!/usr/bin/env bash
# Start the real Nacos servers, run the integration tests against all of them,
# stop the servers. Used by `make test` and CI.
#
#   NACOS_KINDS   servers to start (default: "java3 java2 rnacos")
#   GO_TEST_ARGS  extra arguments for go test (e.g. -run TestThinPath)
#
# Servers start in parallel; each keeps its data and log in a temp dir that
# is removed afterwards (kept, with its path printed, when a test fails).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nacos="$root/test/nacos/nacos.sh"
kinds=${NACOS_KINDS:-java3 java2 rnacos}
work=$(mktemp -d "${TMPDIR:-/tmp}/nacos-it.XXXXXX")

cleanup() {
  local rc=$?
  for k in $kinds; do NACOS_RUN_DIR="$work/$k" "$nacos" "$k" stop >/dev/null 2>&1 || true; done
  if [ $rc -eq 0 ]; then rm -rf "$work"; else echo "integration: failed; server logs kept under $work" >&2; fi
  exit $rc
}
trap cleanup EXIT INT TERM

# Install first (sequentially: builds and downloads compete for 2 cores).
for k in $kinds; do
  t0=$SECONDS
  "$nacos" "$k" install
  echo "integration: $k installed/checked in $((SECONDS - t0))s"
done

servers=""
for k in $kinds; do
  mkdir -p "$work/$k"
  NACOS_RUN_DIR="$work/$k" "$nacos" "$k" start
done
for k in $kinds; do
  NACOS_RUN_DIR="$work/$k" "$nacos" "$k" wait-ready
  servers="${servers:+$servers,}$k=$(NACOS_RUN_DIR="$work/$k" "$nacos" "$k" addr)"
done
echo "integration: servers $servers"

cd "$root"
NACOS_SERVERS="$servers" go run ./test/warmup
# No -race here: nacos-sdk-go v2.3.5 has data races of its own that show up
# when one process runs many SDK clients, as these tests do (see README,
# "Known SDK issues"). Our concurrent code runs under -race in `make unit`.
# shellcheck disable=SC2086
NACOS_SERVERS="$servers" NACOS_REQUIRE=1 go test -count=1 -v -tags integration -timeout 20m ${GO_TEST_ARGS:-} ./test/...
