#!/usr/bin/env bash
# make demo-thin: use the Nacos at NACOS_ADDR, or start a local Java Nacos 3.x
# (NACOS_KIND to choose another), run the demo against it, clean up.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
./scripts/bootstrap.sh >/dev/null
if [ -z "${NACOS_ADDR:-}" ]; then
  kind=${NACOS_KIND:-java3}
  export NACOS_RUN_DIR
  NACOS_RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/nacos-demo.XXXXXX")
  trap './test/nacos/nacos.sh "$kind" stop; rm -rf "$NACOS_RUN_DIR"' EXIT INT TERM
  echo "demo: starting a local Nacos ($kind); first run downloads it, later runs start from the cache"
  ./test/nacos/nacos.sh "$kind" start
  ./test/nacos/nacos.sh "$kind" wait-ready
  NACOS_ADDR=$(./test/nacos/nacos.sh "$kind" addr)
  export NACOS_ADDR
fi
go run ./cmd/ai-demo
