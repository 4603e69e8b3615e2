# shellcheck shell=bash
# r-nacos (the Rust Nacos server, crate `rnacos`), built from crates.io into the cache.
# Sourced by nacos.sh after lib.sh. Configured only through RNACOS_* variables
# (see AppSysConfig::init_from_env in the crate's src/common/mod.rs).

RNACOS_VERSION=0.8.8
RNACOS_ROOT="$NACOS_CACHE/rnacos-$RNACOS_VERSION"
RNACOS_BIN="$RNACOS_ROOT/bin/rnacos"

server_install() {
  [ -x "$RNACOS_BIN" ] && return 0
  command -v cargo >/dev/null || die "cargo is needed to build rnacos (https://rustup.rs)"
  # The crate has no build script and vendors its protobuf code; a C compiler
  # is all it needs beyond cargo (for sqlite/ring/zstd).
  if ! command -v cc >/dev/null; then
    say "installing a C compiler (apt-get)"
    sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd=sudo
    $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq build-essential
  fi
  say "building rnacos $RNACOS_VERSION with cargo (cold build: about 28 min on 2 busy cores)"
  mkdir -p "$RNACOS_ROOT"
  CARGO_TARGET_DIR="$RNACOS_ROOT/target" \
    cargo install rnacos --version "$RNACOS_VERSION" --locked --root "$RNACOS_ROOT" >&2 \
    || die "cargo install rnacos $RNACOS_VERSION failed"
  rm -rf "$RNACOS_ROOT/target"
  [ -x "$RNACOS_BIN" ] || die "rnacos binary missing after install: $RNACOS_BIN"
}

# _rnacos_free_port EXCLUDED... -> a random free port not in the excluded list.
_rnacos_free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$(( 20000 + RANDOM % 20000 ))
    case " $* " in *" $p "*) continue ;; esac
    port_free "$p" && { echo "$p"; return 0; }
  done
  die "no free port found"
}

server_start() {
  local port=$1 grpc=$(( $1 + 1000 )) console
  console=$(_rnacos_free_port "$port" "$grpc")
  echo "$console" >"$NACOS_RUN_DIR/console_port"
  echo "$RNACOS_VERSION" >"$NACOS_RUN_DIR/version"
  # cd into the run dir and pass an empty env file: by default rnacos reads
  # ./.env (and parents') and would pick up settings from the caller's tree.
  # The raft node address defaults to 127.0.0.1:GRPC, so no extra port is used.
  (
    cd "$NACOS_RUN_DIR"
    exec env \
      RNACOS_SDK_HOST=127.0.0.1 RNACOS_CONSOLE_HOST=127.0.0.1 \
      RNACOS_HTTP_PORT="$port" RNACOS_GRPC_PORT="$grpc" RNACOS_HTTP_CONSOLE_PORT="$console" \
      RNACOS_DATA_DIR="$NACOS_RUN_DIR/data" RNACOS_CONFIG_DB_FILE="$NACOS_RUN_DIR/data/config.db" \
      RNACOS_ENABLE_OPEN_API_AUTH=false RNACOS_ENABLE_NO_AUTH_CONSOLE=true \
      RNACOS_ENABLE_METRICS=false RNACOS_HTTP_WORKERS=2 RUST_LOG="${RUST_LOG:-info}" \
      setsid "$RNACOS_BIN" --env-file /dev/null
  ) >"$NACOS_RUN_DIR/log" 2>&1 </dev/null &
  echo $! >"$NACOS_RUN_DIR/pid"
}

server_wait_ready() {
  local base="http://127.0.0.1:$(cat "$NACOS_RUN_DIR/port")" try
  # /nacos/health answers once the raft-backed stores are up; then make sure
  # the config and naming open APIs answer too (404 for a missing config).
  # r-nacos 0.8.8 sometimes panics in its raft apply actor at start
  # (raftapply.rs:421, an unwrap on None) and then answers 503 forever while
  # the process lives on: restart it on fresh data, up to twice.
  for try in 1 2 3; do
    if wait_http "$base/nacos/health" 20 2>/dev/null; then break; fi
    if [ "$try" = 3 ] || ! grep -q "panicked" "$NACOS_RUN_DIR/log"; then
      wait_http "$base/nacos/health" "$1" || return 1
      break
    fi
    say "rnacos panicked at start (known r-nacos 0.8.8 raft bug); restarting on fresh data"
    cp "$NACOS_RUN_DIR/log" "$NACOS_RUN_DIR/log.panic$try"
    stop_pid
    rm -rf "$NACOS_RUN_DIR/data"; mkdir -p "$NACOS_RUN_DIR/data"
    server_start "$(cat "$NACOS_RUN_DIR/port")"
  done
  local code
  code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 \
    "$base/nacos/v1/cs/configs?dataId=nacos-ai-bridge-probe&group=DEFAULT_GROUP") || code=000
  case "$code" in 200|404) ;; *) say "config API answered $code"; tail -n 30 "$NACOS_RUN_DIR/log" >&2; return 1 ;; esac
  curl -fsS -o /dev/null --max-time 5 "$base/nacos/v1/ns/instance/list?serviceName=nacos-ai-bridge-probe" \
    || { say "naming API not answering"; tail -n 30 "$NACOS_RUN_DIR/log" >&2; return 1; }
}
