# shellcheck shell=bash
# Java Nacos servers (kind java3 / java2), assembled from Maven Central.
# Sourced by nacos.sh with $kind set; defines server_install, server_start,
# server_wait_ready.
#
# Why it looks like this: Alibaba publishes only the client-side modules
# (nacos-api, nacos-common, nacos-client) under com.alibaba.nacos on Maven
# Central. The server modules and the runnable server jar (a release-profile
# repackage) are not there. Two community groups republish the unchanged
# server modules, and those are what we use:
#   java3  io.github.pig-mesh.nacos  3.1.0-bugfix  (Nacos 3.1.0 + fixes; the
#          only 3.x version served; it has no nacos-bootstrap module)
#   java2  com.pig4cloud.nacos       2.0.4.RELEASE (the newest 2.x served; it
#          has no nacos-console module, which carried the main class)
# The missing launcher class is generated below (a few lines each) and compiled
# against the resolved classpath with javac.

JAVA3_GROUP=io.github.pig-mesh.nacos
JAVA3_VERSION=3.1.0-bugfix
JAVA2_GROUP=com.pig4cloud.nacos
JAVA2_VERSION=2.0.4.RELEASE
# Both run on the default JDK 17 (Spring Boot 3.4.9 and 2.6.3 respectively).
NACOS_JAVA_HOME=${NACOS_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
MVN_DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.6.1
# Bump when the generated pom or launcher source changes, to force a rebuild.
JAVA_LAUNCHER_REV=1

case "$kind" in
  java3) java_group=$JAVA3_GROUP java_version=$JAVA3_VERSION java_main=com.alibaba.nacos.bootstrap.NacosBootstrap ;;
  java2) java_group=$JAVA2_GROUP java_version=$JAVA2_VERSION java_main=com.alibaba.nacos.Nacos ;;
  *) die "java.sh: unknown kind '$kind'" ;;
esac
java_dir="$NACOS_CACHE/$kind"

_java_bin() {
  if [ -x "$NACOS_JAVA_HOME/bin/java" ]; then echo "$NACOS_JAVA_HOME/bin"; return; fi
  local j; j=$(command -v java) || die "no java found (set NACOS_JAVA_HOME to a JDK 17+)"
  dirname "$(readlink -f "$j")"
}

_java_pom() {
  local deps a
  case "$kind" in
    # nacos-console pulls in config, naming, ai, lock, plugins; nacos-server
    # holds the core/web application classes the launcher starts.
    java3) deps="nacos-console nacos-server" ;;
    java2) deps="nacos-config nacos-naming nacos-istio nacos-cmdb" ;;
  esac
  cat <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.nacos-ai-bridge</groupId>
  <artifactId>$kind-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
EOF
  for a in $deps; do
    echo "    <dependency><groupId>$java_group</groupId><artifactId>$a</artifactId><version>$java_version</version></dependency>"
  done
  echo "  </dependencies>"
  echo "</project>"
}

_java_launcher_source() {
  case "$kind" in
    java3)
      # Same start sequence as upstream's NacosBootstrap in "merged" mode:
      # core context, then the server web context (main port) and the console
      # context (console port) as its children. No MCP registry context: the
      # republish has no mcp-registry-adaptor module, and it is off by default.
      mkdir -p "$java_dir/src/com/alibaba/nacos/bootstrap"
      cat >"$java_dir/src/com/alibaba/nacos/bootstrap/NacosBootstrap.java" <<'EOF'
package com.alibaba.nacos.bootstrap;

import com.alibaba.nacos.NacosServerBasicApplication;
import com.alibaba.nacos.NacosServerWebApplication;
import com.alibaba.nacos.console.NacosConsole;
import com.alibaba.nacos.core.listener.startup.NacosStartUp;
import com.alibaba.nacos.core.listener.startup.NacosStartUpManager;
import com.alibaba.nacos.sys.env.DeploymentType;
import com.alibaba.nacos.sys.env.EnvUtil;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Nacos 3 launcher, merged deployment (server + console in one process). */
public final class NacosBootstrap {
    public static void main(String[] args) {
        EnvUtil.setDeploymentType(DeploymentType.MERGED);
        NacosStartUpManager.start(NacosStartUp.CORE_START_UP_PHASE);
        ConfigurableApplicationContext core = new SpringApplicationBuilder(NacosServerBasicApplication.class)
                .web(WebApplicationType.NONE).run(args);
        NacosStartUpManager.start(NacosStartUp.WEB_START_UP_PHASE);
        new SpringApplicationBuilder(NacosServerWebApplication.class).parent(core).run(args);
        NacosStartUpManager.start(NacosStartUp.CONSOLE_START_UP_PHASE);
        new SpringApplicationBuilder(NacosConsole.class).parent(core).run(args);
    }
}
EOF
      ;;
    java2)
      # Upstream's com.alibaba.nacos.Nacos plus the two things the missing
      # console module provided that the server cannot start or route without:
      # the handler method cache used by the HTTP filters, and an AuthManager
      # bean (a no-op: auth is off).
      mkdir -p "$java_dir/src/com/alibaba/nacos"
      cat >"$java_dir/src/com/alibaba/nacos/Nacos.java" <<'EOF'
package com.alibaba.nacos;

import com.alibaba.nacos.auth.AuthManager;
import com.alibaba.nacos.auth.model.Permission;
import com.alibaba.nacos.auth.model.User;
import com.alibaba.nacos.core.code.ControllerMethodsCache;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.servlet.ServletComponentScan;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.EnableScheduling;

/** Nacos 2 starter. */
@SpringBootApplication(scanBasePackages = "com.alibaba.nacos")
@ServletComponentScan
@EnableScheduling
public class Nacos {

    public static void main(String[] args) {
        SpringApplication.run(Nacos.class, args);
    }

    @Autowired
    public void initMethodsCache(ControllerMethodsCache methodsCache) {
        methodsCache.initClassMethod("com.alibaba.nacos.core.controller");
        methodsCache.initClassMethod("com.alibaba.nacos.naming.controllers");
        methodsCache.initClassMethod("com.alibaba.nacos.config.server.controller");
    }

    @Bean
    public AuthManager noAuthManager() {
        return new AuthManager() {
            @Override public User login(Object request) { return new User(); }
            @Override public User loginRemote(Object request) { return new User(); }
            @Override public void auth(Permission permission, User user) { }
        };
    }
}
EOF
      ;;
  esac
}

server_install() {
  local stamp="$kind $java_group:$java_version launcher-rev=$JAVA_LAUNCHER_REV"
  if [ -f "$java_dir/stamp" ] && [ "$(cat "$java_dir/stamp")" = "$stamp" ]; then return 0; fi
  command -v mvn >/dev/null || die "mvn not found (apt-get install maven)"
  local bin; bin=$(_java_bin)
  mkdir -p "$java_dir"
  # Two installs at once (parallel tests) must not interleave.
  exec 9>"$java_dir/.lock"
  flock 9
  if [ -f "$java_dir/stamp" ] && [ "$(cat "$java_dir/stamp")" = "$stamp" ]; then exec 9>&-; return 0; fi
  say "$kind: resolving $java_group:$java_version from Maven Central (first time takes a minute or two)"
  rm -rf "$java_dir/src" "$java_dir/classes" "$java_dir/stamp" "$java_dir/classpath.txt"
  _java_pom >"$java_dir/pom.xml"
  if ! (cd "$java_dir" && mvn -B -q -f pom.xml "$MVN_DEPENDENCY_PLUGIN:build-classpath" \
        -Dmdep.outputFile=classpath.tmp -Dmdep.includeTypes=jar >mvn.log 2>&1); then
    tail -n 40 "$java_dir/mvn.log" >&2; exec 9>&-; die "$kind: mvn could not resolve the server classpath"
  fi
  _java_launcher_source
  mkdir -p "$java_dir/classes"
  if ! "$bin/javac" -nowarn -encoding UTF-8 -cp "$(cat "$java_dir/classpath.tmp")" -d "$java_dir/classes" \
        $(find "$java_dir/src" -name '*.java') >"$java_dir/javac.log" 2>&1; then
    cat "$java_dir/javac.log" >&2; exec 9>&-; die "$kind: compiling the launcher failed"
  fi
  mv "$java_dir/classpath.tmp" "$java_dir/classpath.txt"
  echo "$stamp" >"$java_dir/stamp"
  exec 9>&-
}

# _java_free_port EXCLUDE... -> a free loopback port not in the given list.
_java_free_port() {
  local p tries=0
  while [ $tries -lt 200 ]; do
    p=$(( 20000 + RANDOM % 20000 ))
    case " $* " in *" $p "*) ;; *) if port_free "$p"; then echo "$p"; return 0; fi ;; esac
    tries=$((tries + 1))
  done
  die "no free port found"
}

server_start() {
  local port=$1 data="$NACOS_RUN_DIR/data" bin console_port="" p
  bin=$(_java_bin)
  # Nacos derives gRPC (port+1000 client, port+1001 cluster) and JRaft
  # (port-1000) from the main port; refuse to start half-bound.
  for p in "$port" $((port + 1000)) $((port + 1001)) $((port - 1000)); do
    port_free "$p" || die "port $p is in use (main port $port needs $port, $((port + 1000)), $((port + 1001)), $((port - 1000)))"
  done
  mkdir -p "$data/conf"
  {
    echo "# generated by test/nacos/java.sh for this run only"
    echo "nacos.inetutils.ip-address=127.0.0.1"
    echo "server.address=127.0.0.1"
    echo "server.tomcat.basedir=$data/tomcat"
    echo "server.tomcat.accesslog.enabled=false"
    echo "server.error.include-message=ALWAYS"
    echo "nacos.core.auth.enabled=false"
    echo "nacos.core.auth.system.type=nacos"
    echo "nacos.core.auth.server.identity.key=nacos-ai-bridge"
    echo "nacos.core.auth.server.identity.value=$(head -c 16 /dev/urandom | base64 | tr -d '=+/')"
    echo "nacos.istio.mcp.server.enabled=false"
    # Derby's first login (it creates the database) can take longer than the
    # 3 s pool default on a busy 2-core machine, e.g. two servers starting.
    echo "db.pool.config.connectionTimeout=60000"
    case "$kind" in
      java3)
        console_port=$(_java_free_port "$port" $((port + 1000)) $((port + 1001)) $((port - 1000)))
        echo "$console_port" >"$NACOS_RUN_DIR/console_port"
        echo "nacos.server.main.port=$port"
        echo "nacos.server.contextPath=/nacos"
        echo "nacos.console.port=$console_port"
        echo "nacos.console.contextPath="
        echo "nacos.core.auth.admin.enabled=false"
        echo "nacos.core.auth.console.enabled=false"
        # 3.x refuses to start without a JWT key, even with auth off.
        echo "nacos.core.auth.plugin.nacos.token.secret.key=$(head -c 32 /dev/urandom | base64 -w0)"
        echo "nacos.ai.mcp.registry.enabled=false"
        echo "management.elastic.metrics.export.enabled=false"
        echo "management.influx.metrics.export.enabled=false"
        ;;
      java2)
        echo "server.port=$port"
        echo "server.servlet.contextPath=/nacos"
        echo "spring.main.allow-circular-references=true"
        # The console module held the Spring Security config that lets requests
        # through when auth is off; without it Boot would demand basic auth.
        echo "spring.autoconfigure.exclude=org.springframework.boot.autoconfigure.security.servlet.SecurityAutoConfiguration,org.springframework.boot.autoconfigure.security.servlet.SecurityFilterAutoConfiguration,org.springframework.boot.autoconfigure.security.servlet.UserDetailsServiceAutoConfiguration,org.springframework.boot.actuate.autoconfigure.security.servlet.ManagementWebSecurityAutoConfiguration"
        echo "management.metrics.export.elastic.enabled=false"
        echo "management.metrics.export.influx.enabled=false"
        ;;
    esac
    # Escape hatch for tests, e.g. nacos.core.api.compatibility.admin.enabled=true
    if [ -n "${NACOS_EXTRA_PROPERTIES:-}" ]; then printf '%s\n' "$NACOS_EXTRA_PROPERTIES"; fi
  } >"$data/conf/application.properties"

  echo "${java_version}" >"$NACOS_RUN_DIR/version"
  local cp; cp="$java_dir/classes:$(cat "$java_dir/classpath.txt")"
  mkdir -p "$data/tmp"
  # user.home/nacos.home/JM.* point into the run dir so nothing lands in ~/nacos
  # or ~/logs; the working directory is the data dir. grpc.listen.ip keeps the
  # 3.x gRPC ports on loopback (2.0.4 has no such switch and binds all
  # interfaces, as does JRaft on port-1000 in both).
  # -XX:TieredStopAtLevel=1 and SerialGC roughly halve startup on 2 cores.
  # setsid makes the JVM its own process-group leader; the shell records its own
  # pid and then execs into java, so pid == pgid for stop_pid.
  (
    cd "$data"
    exec setsid bash -c 'echo $$ >"$0"; exec "$@"' "$NACOS_RUN_DIR/pid" \
      "$bin/java" -Xms256m -Xmx768m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData \
      ${NACOS_JAVA_OPTS:-} -Djava.io.tmpdir="$data/tmp" \
      -Dnacos.standalone=true -DembeddedStorage=true -Dnacos.deployment.type=merged \
      -Dnacos.home="$data" -Duser.home="$data" \
      -DJM.LOG.PATH="$data/logs/client" -DJM.SNAPSHOT.PATH="$data/snapshot" \
      -Dderby.stream.error.file="$data/derby.log" \
      -Dnacos.remote.grpc.listen.ip=127.0.0.1 \
      -cp "$cp" "$java_main" \
      --spring.config.additional-location="file:$data/conf/"
  ) </dev/null >"$NACOS_RUN_DIR/log" 2>&1 &
  local i
  for i in $(seq 1 50); do [ -s "$NACOS_RUN_DIR/pid" ] && return 0; sleep 0.1; done
  die "$kind did not start (no pid written); see $NACOS_RUN_DIR/log"
}

# _java_wait_status URL CODE DEADLINE_SECONDS -> 0 once URL answers CODE.
_java_wait_status() {
  local url=$1 want=$2 deadline=$3 got
  while [ "$SECONDS" -lt "$deadline" ]; do
    got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" 2>/dev/null || true)
    [ "$got" = "$want" ] && return 0
    if ! kill -0 "$(cat "$NACOS_RUN_DIR/pid" 2>/dev/null || echo 0)" 2>/dev/null; then
      say "$kind exited before it was ready; last log lines:"; tail -n 40 "$NACOS_RUN_DIR/log" >&2 || true
      return 1
    fi
    sleep 0.5
  done
  say "$kind not ready after ${4:-?}s: $url (last status $got)"; tail -n 40 "$NACOS_RUN_DIR/log" >&2 || true
  return 1
}

server_wait_ready() {
  local timeout=$1 port deadline b probe
  port=$(cat "$NACOS_RUN_DIR/port")
  deadline=$((SECONDS + timeout))
  b="http://127.0.0.1:$port/nacos"
  # A config that never exists: 404 means the config module (and its derby
  # store) answers; during startup it is a connection error or 503.
  probe="$b/v1/cs/configs?dataId=nacos-ai-bridge.ready&group=READY_PROBE"
  [ "$kind" = java3 ] && probe="$b/v3/admin/cs/config?dataId=nacos-ai-bridge.ready&groupName=READY_PROBE"
  case "$kind" in
    java3)
      # Readiness covers the config store and naming; then wait for the console
      # context too, which starts last, so the process is fully up.
      _java_wait_status "$b/v3/admin/core/state/readiness" 200 "$deadline" "$timeout" &&
        _java_wait_status "$probe" 404 "$deadline" "$timeout" &&
        _java_wait_status "http://127.0.0.1:$(cat "$NACOS_RUN_DIR/console_port")/v3/console/health/readiness" 200 "$deadline" "$timeout"
      ;;
    java2)
      # No readiness endpoint in 2.0.4 without the console module: probe naming
      # and config directly.
      _java_wait_status "$b/v1/ns/operator/metrics" 200 "$deadline" "$timeout" &&
        _java_wait_status "$probe" 404 "$deadline" "$timeout"
      ;;
  esac
}
