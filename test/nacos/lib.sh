# shellcheck shell=bash
# Shared helpers for the real-Nacos scripts. Sourced, never run.
#
# Layout of a run directory ($NACOS_RUN_DIR), the same for every server kind:
#   pid       the server's process id (its own process group leader)
#   port      main HTTP port (the SDK's "port"; open API lives here)
#   grpc_port client gRPC port (port+1000 for every kind we start)
#   version   the server version string
#   log       the server's stdout+stderr
#   data/     the server's data, deleted with the run directory

set -euo pipefail

NACOS_CACHE="${NACOS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nacos-ai-bridge}"

die() { echo "nacos: $*" >&2; exit 1; }
say() { echo "nacos: $*" >&2; }

# port_free PORT -> 0 when nothing listens on 127.0.0.1:PORT and it can be bound.
port_free() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}

# pick_port -> prints a port P such that P, P+1000 and P+1001 are free and
# P-1000 too (Java Nacos derives its gRPC and raft ports from the main port).
pick_port() {
  local p tries=0
  while [ $tries -lt 200 ]; do
    p=$(( 20000 + RANDOM % 20000 ))
    if port_free "$p" && port_free $((p + 1000)) && port_free $((p + 1001)) && port_free $((p - 1000)); then
      echo "$p"; return 0
    fi
    tries=$((tries + 1))
  done
  die "no free port triple found"
}

require_run_dir() {
  [ -n "${NACOS_RUN_DIR:-}" ] || die "NACOS_RUN_DIR must be set"
  mkdir -p "$NACOS_RUN_DIR/data"
}

# wait_http URL TIMEOUT_S -> 0 once URL answers 2xx.
wait_http() {
  local url=$1 timeout=$2 start=$SECONDS
  while [ $((SECONDS - start)) -lt "$timeout" ]; do
    if curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; then return 0; fi
    if [ -f "$NACOS_RUN_DIR/pid" ] && ! kill -0 "$(cat "$NACOS_RUN_DIR/pid")" 2>/dev/null; then
      say "server exited before it was ready; last log lines:"; tail -n 30 "$NACOS_RUN_DIR/log" >&2 || true
      return 1
    fi
    sleep 0.5
  done
  say "not ready after ${timeout}s: $url"; tail -n 30 "$NACOS_RUN_DIR/log" >&2 || true
  return 1
}

# stop_pid: TERM the process group, then KILL after a grace period.
stop_pid() {
  local f="$NACOS_RUN_DIR/pid" pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
