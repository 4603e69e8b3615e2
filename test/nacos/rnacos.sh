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

# _rnacos_config_roundtrip BASE: publish a probe config, read it back, delete
# it. Config writes go through r-nacos's raft apply actor, which naming does
# not, so this is what proves the config store works.
_rnacos_config_roundtrip() {
  local base=$1 q="dataId=nacos-ai-bridge-probe&group=DEFAULT_GROUP" got
  for _ in $(seq 1 40); do
    if curl -fsS -o /dev/null --max-time 3 -X POST "$base/nacos/v1/cs/configs" -d "$q&content=ok" 2>/dev/null &&
       got=$(curl -fsS --max-time 3 "$base/nacos/v1/cs/configs?$q" 2>/dev/null) && [ "$got" = ok ]; then
      curl -fsS -o /dev/null --max-time 3 -X DELETE "$base/nacos/v1/cs/configs?$q" 2>/dev/null || true
      return 0
    fi
    sleep 0.25
  done
  return 1
}

server_wait_ready() {
  local base="http://127.0.0.1:$(cat "$NACOS_RUN_DIR/port")" try
  # r-nacos 0.8.8 sometimes panics in its raft apply actor at start
  # (raftapply.rs:421, an unwrap on None). The process lives on: sometimes
  # it answers 503 forever, sometimes /nacos/health and naming answer while
  # no config write is ever applied. So a start counts only when there is no
  # panic in the log and a config survives a write and a read; otherwise
  # restart on fresh data. It is a start-up race (an actor handles a message
  # before its dependencies are injected) and hit about one start in two
  # here, so allow up to eight starts (all failing: about 1 in 250).
  local tries=8
  for try in $(seq 1 $tries); do
    if wait_http "$base/nacos/health" 20 2>/dev/null ||
       { ! grep -q "panicked" "$NACOS_RUN_DIR/log" && wait_http "$base/nacos/health" "$1"; }; then
      if ! grep -q "panicked" "$NACOS_RUN_DIR/log" && _rnacos_config_roundtrip "$base"; then
        break
      fi
    fi
    if [ "$try" = "$tries" ]; then
      say "rnacos not usable after $tries starts"; tail -n 30 "$NACOS_RUN_DIR/log" >&2; return 1
    fi
    say "rnacos panicked or cannot store a config (known r-nacos 0.8.8 raft start bug); restarting on fresh data"
    cp "$NACOS_RUN_DIR/log" "$NACOS_RUN_DIR/log.panic$try"
    stop_pid
    rm -rf "$NACOS_RUN_DIR/data"; mkdir -p "$NACOS_RUN_DIR/data"
    server_start "$(cat "$NACOS_RUN_DIR/port")"
  done
  curl -fsS -o /dev/null --max-time 5 "$base/nacos/v1/ns/instance/list?serviceName=nacos-ai-bridge-probe" \
    || { say "naming API not answering"; tail -n 30 "$NACOS_RUN_DIR/log" >&2; return 1; }
}
