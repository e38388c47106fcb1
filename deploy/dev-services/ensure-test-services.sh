#!/usr/bin/env bash
# Makes the services the tests need available (test/README.md), then returns. For each one: use the URL
# in its env var when given; otherwise use a local one, starting it (and installing its Debian
# package, as root) when it is not running. Fails with a clear message when neither works.
# Idempotent and quick when everything is already up.
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { printf '[test-services] %s\n' "$*" >&2; }
die() { printf '[test-services] ERROR: %s\n' "$*" >&2; exit 1; }

APT_UPDATED=0
APT_LOG=${TMPDIR:-/tmp}/billing-test-services-apt.log
apt() { # quiet unless it fails
  DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a apt-get "$@" >>"$APT_LOG" 2>&1 || {
    tail -n 40 "$APT_LOG" >&2
    die "apt-get $* failed (full log: $APT_LOG)"
  }
}
install_packages() {
  local missing=()
  for pkg in "$@"; do dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "missing Debian packages: ${missing[*]}. Install them (sudo apt-get install ${missing[*]}) or run as root."
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update"
    apt update
    APT_UPDATED=1
  fi
  log "installing ${missing[*]}"
  apt install -y "${missing[@]}"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() { # description, seconds, command...
  local what=$1 seconds=$2; shift 2
  for _ in $(seq 1 "$((seconds * 5))"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "$what did not come up within ${seconds}s"
}

# Tools the tests call directly: a C compiler and librdkafka for the Kafka test broker, pdftotext
# for the PDF test, docker-compose and nginx to validate the deploy files, Postgres' binaries for
# the test that freezes a Postgres of its own, chromium for the browser tests (driven by
# playwright-core, which never downloads a browser).
install_packages gcc libc6-dev librdkafka-dev poppler-utils docker-compose nginx-core postgresql chromium

# --- Postgres ---------------------------------------------------------------------------------
if [ -z "${DATABASE_URL:-}" ] && ! port_open 5432; then
  install_packages postgresql
  cluster=$(ls /etc/postgresql | sort -V | tail -n 1)
  log "starting PostgreSQL $cluster"
  pg_ctlcluster --skip-systemctl-redirect "$cluster" main start
  wait_for "PostgreSQL" 30 port_open 5432
  # A fresh cluster wants a password over TCP; the tests' default URL uses postgres/postgres.
  su postgres -c "psql -q -c \"ALTER USER postgres PASSWORD 'postgres'\"" >&2
fi

# --- Redis ------------------------------------------------------------------------------------
if [ -z "${REDIS_URL:-}" ] && ! port_open 6379; then
  install_packages redis-server
  log "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >&2
  wait_for "Redis" 15 port_open 6379
fi

# --- ClickHouse -------------------------------------------------------------------------------
if [ -z "${CLICKHOUSE_URL:-}" ] && ! port_open 8123; then
  install_packages clickhouse-server
  log "starting ClickHouse"
  mkdir -p /var/lib/clickhouse /var/log/clickhouse-server
  chown -R clickhouse:clickhouse /var/lib/clickhouse /var/log/clickhouse-server
  su -s /bin/sh clickhouse -c "clickhouse-server --config-file=/etc/clickhouse-server/config.xml --daemon" >&2
  wait_for "ClickHouse" 60 curl -sf http://127.0.0.1:8123/ping
fi

# --- Kafka test broker ------------------------------------------------------------------------
# Compiled here, started per test run by test/setup/global-setup.ts (it lives as long as the run).
if [ -z "${KAFKA_BROKERS:-}" ]; then
  source=deploy/dev-services/kafka-test-broker.c
  binary=.cache/kafka-test-broker
  if [ ! -x "$binary" ] || [ "$source" -nt "$binary" ]; then
    mkdir -p .cache
    log "compiling the Kafka test broker"
    gcc -O2 -o "$binary" "$source" -lrdkafka || die "could not compile $source against librdkafka"
  fi
fi
log "ready"
