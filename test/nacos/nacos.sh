#!/usr/bin/env bash
# Start, probe and stop a real Nacos server for development and tests.
#
#   test/nacos/nacos.sh KIND COMMAND
#     KIND     java3 (Java Nacos 3.x, the default) | java2 (Java Nacos 2.x) | rnacos
#     COMMAND  install     download/build into the cache ($NACOS_CACHE), idempotent
#              start       start in the background (NACOS_RUN_DIR required;
#                          NACOS_PORT optional, else a free port is picked)
#              wait-ready  block until the server answers (NACOS_READY_TIMEOUT, default 180 s)
#              stop        stop it (idempotent)
#              log         print its log
#              addr        print 127.0.0.1:PORT
#
# Every server listens on loopback only, keeps its data under $NACOS_RUN_DIR/data
# and runs with authentication off.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

kind=${1:-}; cmd=${2:-}
case "$kind" in
  java3|java2) . "$here/java.sh" ;;
  rnacos) . "$here/rnacos.sh" ;;
  *) die "unknown server kind '${kind}' (java3, java2, rnacos)" ;;
esac

case "$cmd" in
  install) server_install ;;
  start)
    require_run_dir
    server_install
    port=${NACOS_PORT:-$(pick_port)}
    echo "$port" >"$NACOS_RUN_DIR/port"
    echo $((port + 1000)) >"$NACOS_RUN_DIR/grpc_port"
    server_start "$port"
    say "$kind $(cat "$NACOS_RUN_DIR/version" 2>/dev/null || echo '?') starting on 127.0.0.1:$port (pid $(cat "$NACOS_RUN_DIR/pid"), log $NACOS_RUN_DIR/log)"
    ;;
  wait-ready)
    require_run_dir
    t0=$SECONDS
    server_wait_ready "${NACOS_READY_TIMEOUT:-180}"
    say "$kind ready on 127.0.0.1:$(cat "$NACOS_RUN_DIR/port") after $((SECONDS - t0))s"
    ;;
  stop) require_run_dir; stop_pid ;;
  log) require_run_dir; cat "$NACOS_RUN_DIR/log" ;;
  addr) require_run_dir; echo "127.0.0.1:$(cat "$NACOS_RUN_DIR/port")" ;;
  *) die "unknown command '${cmd}' (install, start, wait-ready, stop, log, addr)" ;;
esac
