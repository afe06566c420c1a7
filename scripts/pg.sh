#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests and the benchmark: initdb + pg_ctl in a temporary
# folder, on 127.0.0.1 at a free port, with password auth. As root it runs as the `postgres` user
# (the server refuses root); otherwise as the caller. One cluster per checkout.
#
#   scripts/pg.sh start [--durable]   start it (fsync off unless --durable); prints its URL
#   scripts/pg.sh url                 print its URL (postgresql://deadletter:...@127.0.0.1:PORT/postgres)
#   scripts/pg.sh restart             kill the server at once (like a crash: -m immediate), start it again
#   scripts/pg.sh stop                stop it and delete its folder
#   scripts/pg.sh run [--durable] CMD...
#                                     start, run CMD with DEADLETTER_POSTGRES_URL set, stop (always)
#
# Needs PostgreSQL 15+ server binaries (scripts/setup.sh postgres installs them).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
dir="${TMPDIR:-/tmp}/deadletter-pg-$(printf %s "$repo" | md5sum | cut -c1-10)"
password=deadletter

bindir() {
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
  if [ -z "$found" ] && command -v pg_config >/dev/null; then found="$(pg_config --bindir)"; fi
  [ -x "$found/initdb" ] || { echo "pg.sh: no PostgreSQL server found; run scripts/setup.sh postgres" >&2; exit 1; }
  echo "$found"
}

# Runs a server binary as the cluster's owner.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

url() {
  [ -f "$dir/port" ] || { echo "pg.sh: no cluster running (scripts/pg.sh start)" >&2; exit 1; }
  echo "postgresql://deadletter:$password@127.0.0.1:$(cat "$dir/port")/postgres"
}

start() {
  local fsync=off
  [ "${1:-}" = --durable ] && fsync=on
  local bin; bin="$(bindir)"
  if [ -f "$dir/port" ] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    url; return
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  printf %s "$password" > "$dir/pwfile"
  as_owner "$bin/initdb" -D "$dir/data" -U deadletter --pwfile="$dir/pwfile" \
    --auth=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  local port
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  echo "$port" > "$dir/port"
  cat >> "$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = $fsync
full_page_writes = $fsync
shared_buffers = 256MB
max_connections = 200
EOF
  # Loaded, not tracking: benchmarks turn it on for what they count (claim_throughput).
  if [ -f "$bin/../lib/pg_stat_statements.so" ]; then
    printf '%s\n' "shared_preload_libraries = 'pg_stat_statements'" \
      "pg_stat_statements.track = none" >> "$dir/data/postgresql.conf"
  fi
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
    { cat "$dir/server.log" >&2; exit 1; }
  url
}

stop() {
  [ -d "$dir/data" ] && as_owner "$(bindir)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  url) url ;;
  restart) as_owner "$(bindir)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m immediate -w -t 60 restart >/dev/null ;;
  stop) stop ;;
  run)
    shift
    flag=()
    if [ "${1:-}" = --durable ]; then flag=(--durable); shift; fi
    stop
    trap stop EXIT
    DEADLETTER_POSTGRES_URL="$(start "${flag[@]}")"
    export DEADLETTER_POSTGRES_URL
    "$@"
    ;;
  *) sed -n '2,14p' "$0" >&2; exit 2 ;;
esac
