#!/usr/bin/env bash
# Throwaway PostgreSQL for the store's tests, on 127.0.0.1 only, trust authentication, fsync off.
#
#   start-postgres.sh [start]   install (as root, from Debian) if missing, init, start; print the DSN on stdout
#   start-postgres.sh dsn       print the DSN
#   start-postgres.sh stop      stop the server (keeps its files)
#   start-postgres.sh purge     stop the server and delete its files
#
# Idempotent: a server already running in the directory is reused. Only the DSN goes to stdout, so
#   export FLEETWAVE_TEST_POSTGRES_DSN=$(internal/edge/store/testdata/start-postgres.sh)
# works; progress goes to stderr. As root, the server runs as the postgres user (initdb refuses root).
# Environment: FLEETWAVE_PG_DIR (default /tmp/fleetwave-pg), FLEETWAVE_PG_PORT (default 55432).
set -euo pipefail

cmd=${1:-start}
dir=${FLEETWAVE_PG_DIR:-/tmp/fleetwave-pg}
port=${FLEETWAVE_PG_PORT:-55432}
db=fleetwave_test
data=$dir/data
dsn="postgres://postgres@127.0.0.1:${port}/${db}?sslmode=disable"

log() { echo "start-postgres: $*" >&2; }

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$d" ] && command -v pg_ctl >/dev/null 2>&1; then
    d=$(dirname "$(command -v pg_ctl)")
  fi
  echo "$d"
}

# as_owner runs a command as the server's owner: postgres when we are root, else ourselves.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

running() { [ -n "$bin" ] && [ -f "$data/PG_VERSION" ] && as_owner "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; }

bin=$(pg_bin)

case "$cmd" in
dsn)
  echo "$dsn"
  exit 0
  ;;
stop | purge)
  if running; then
    log "stopping the server in $data"
    as_owner "$bin/pg_ctl" -D "$data" -m fast -w stop >&2
  fi
  if [ "$cmd" = purge ]; then
    rm -rf "$dir"
  fi
  exit 0
  ;;
start) ;;
*)
  echo "usage: $0 [start|dsn|stop|purge]" >&2
  exit 2
  ;;
esac

if [ -z "$bin" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    log "PostgreSQL is not installed and I am not root: install the postgresql package"
    exit 1
  fi
  log "installing postgresql from the Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  bin=$(pg_bin)
  [ -n "$bin" ] || { log "postgresql installed but no pg_ctl found"; exit 1; }
fi

if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
  log "creating the postgres system user"
  useradd --system --home-dir "$dir" --shell /bin/sh postgres
fi

mkdir -p "$dir"
if [ "$(id -u)" -eq 0 ]; then
  chown postgres: "$dir"
  chmod 700 "$dir"
fi

if [ ! -f "$data/PG_VERSION" ]; then
  log "initialising $data ($("$bin/postgres" --version))"
  rm -rf "$data"
  as_owner "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
fi

if running; then
  log "already running in $data"
else
  log "starting on 127.0.0.1:$port"
  if ! as_owner "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    start >&2; then
    tail -n 30 "$dir/server.log" >&2 || true
    exit 1
  fi
fi

psql=("$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1)
for _ in $(seq 1 30); do
  "${psql[@]}" -tAc "SELECT 1" >/dev/null 2>&1 && break
  sleep 1
done
if [ "$("${psql[@]}" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
  "${psql[@]}" -c "CREATE DATABASE $db" >&2
fi
echo "$dsn"
