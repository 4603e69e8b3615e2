#!/usr/bin/env bash
# make demo: a local Nacos (or the one at NACOS_ADDR), two sample model
# servers with a nacos-ai-bridge sidecar each, an operator's live config
# change, the operator's view, balancer picks through the sidecars' proxies,
# and a drain. Everything it starts is stopped at the end.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
./scripts/bootstrap.sh >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/nacos-ai-demo.XXXXXX")
pids=()
nacos_kind=""
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$nacos_kind" ]; then NACOS_RUN_DIR="$work/nacos" ./test/nacos/nacos.sh "$nacos_kind" stop || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
step() { printf '\n== %s\n' "$*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

if [ -z "${NACOS_ADDR:-}" ]; then
  nacos_kind=${NACOS_KIND:-java3}
  step "starting a local Nacos ($nacos_kind); the first run downloads it, later runs start from the cache"
  mkdir -p "$work/nacos"
  NACOS_RUN_DIR="$work/nacos" ./test/nacos/nacos.sh "$nacos_kind" start
  NACOS_RUN_DIR="$work/nacos" ./test/nacos/nacos.sh "$nacos_kind" wait-ready
  NACOS_ADDR=$(NACOS_RUN_DIR="$work/nacos" ./test/nacos/nacos.sh "$nacos_kind" addr)
fi
export NACOS_ADDR
rnacos=false; [ "$nacos_kind" = rnacos ] && rnacos=true
svc=demo-chat
bin="$work/bin"
step "building the sidecar and the sample model server"
CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go build -o "$bin/nacos-ai-bridge" ./cmd/nacos-ai-bridge
go build -o "$bin/sample-backend" ./cmd/sample-backend

declare -a proxy admin
for i in 1 2; do
  bport=$(free_port); proxy[$i]=$(free_port); admin[$i]=$(free_port)
  "$bin/sample-backend" -port "$bport" >"$work/backend$i.log" 2>&1 &
  pids+=($!)
  cat >"$work/sidecar$i.yaml" <<YAML
nacos: {servers: ["$NACOS_ADDR"], rnacos: $rnacos}
service: {name: $svc, ip: 127.0.0.1, port: ${proxy[$i]}, region: demo}
backend: {engine: vllm, url: "http://127.0.0.1:$bport", tasks: [generation], max-concurrent: 16, max-tokens: 4096}
health: {cycle: 1s, inference-every: 5, probe: {path: /v1/completions, body: '{"prompt":"ping","max_tokens":1}'}}
warmup: {rounds: 5}
drain: {propagation-delay: 2s, timeout: 10s}
proxy: {enabled: true, listen: "127.0.0.1:${proxy[$i]}"}
admin: {listen: "127.0.0.1:${admin[$i]}"}
log: {level: warn}
YAML
  "$bin/nacos-ai-bridge" run -config "$work/sidecar$i.yaml" 2>"$work/sidecar$i.log" &
  pids+=($!)
  echo "sample model server $i on :$bport, its sidecar's proxy on :${proxy[$i]}, admin on 127.0.0.1:${admin[$i]}"
done

step "waiting for both instances to register, warm up and become ACTIVE"
for _ in $(seq 1 60); do
  n=$("$bin/nacos-ai-bridge" instances "$svc" 2>/dev/null | grep -c ' ACTIVE .* true ' || true)
  [ "$n" = 2 ] && break
  sleep 1
done
"$bin/nacos-ai-bridge" instances "$svc"

step "an operator publishes ai-inference-config (group AI_SERVICE) through the Nacos open API"
cat >"$work/ai-inference-config.yaml" <<'YAML'
inference:
  temperature: 0.3
  top-p: 0.9
  max-tokens: 128
  models:
    qwen2.5-7b-instruct:
      max-tokens: 256
YAML
cat "$work/ai-inference-config.yaml"
"$bin/nacos-ai-bridge" config validate "$work/ai-inference-config.yaml"
curl -fsS -X POST "http://$NACOS_ADDR/nacos/v1/cs/configs" --data-urlencode dataId=ai-inference-config \
  --data-urlencode group=AI_SERVICE --data-urlencode type=yaml --data-urlencode "content@$work/ai-inference-config.yaml" >/dev/null
sleep 2

step "six calls: a balancer pick each, sent through the picked sidecar (it fills the parameters the caller left out)"
for i in 1 2 3 4 5 6; do
  addr=$("$bin/nacos-ai-bridge" pick -model qwen2.5-7b-instruct "$svc")
  body='{"model":"qwen2.5-7b-instruct","messages":[{"role":"user","content":"hi"}]}'
  [ "$i" = 6 ] && body='{"model":"qwen2.5-7b-instruct","messages":[{"role":"user","content":"hi"}],"max_tokens":100000}'
  printf 'pick %s -> %s\n' "$addr" "$(curl -fsS "http://$addr/v1/chat/completions" -H 'Content-Type: application/json' -d "$body" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("served_by", r["served_by"], "params", r["params"])')"
done
echo "(the last call asked for max_tokens=100000: clamped to the model's 256)"

step "the operator's view after the change (config.rev, load)"
"$bin/nacos-ai-bridge" instances "$svc"
step "sidecar 1's admin endpoints"
curl -fsS "http://127.0.0.1:${admin[1]}/readyz"
curl -fsS "http://127.0.0.1:${admin[1]}/metrics" | grep -E '^nacos_ai_bridge_(lifecycle|warm|metadata_writes|config_applies|proxy_requests|probe_total|proxy_request_duration_seconds_(count|sum)|probe_duration_seconds_count)' | grep -v ' 0$' || true

step "sidecar 1 drains on SIGTERM: DRAINING at once, serves for 2 s, then leaves"
kill -TERM "${pids[1]}"
wait "${pids[1]}" || true
sleep 1
"$bin/nacos-ai-bridge" instances "$svc"
printf '\npicks now: %s\n' "$("$bin/nacos-ai-bridge" pick "$svc")"
echo "done."
