#!/usr/bin/env bash
# Install what the build, the tests and the demo need when it is missing:
# Go, a JDK 17+, Maven, Rust/cargo, curl, python3. Idempotent and quick when
# everything is present. Uses the distribution's packages (apt) only.
set -euo pipefail
need=()
command -v go >/dev/null 2>&1 || need+=(golang-go)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v cargo >/dev/null 2>&1 || need+=(cargo)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v make >/dev/null 2>&1 || need+=(make)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v setsid >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  echo "bootstrap: installing ${need[*]}"
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${need[@]}"
fi
# go.mod asks for Go 1.26; an older go fetches that toolchain from the module
# proxy by itself (GOTOOLCHAIN=auto, the default).
echo "bootstrap: $(go version), $(java -version 2>&1 | head -1), $(mvn -B -v 2>/dev/null | head -1), $(cargo --version)"
