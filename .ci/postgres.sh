#!/usr/bin/env bash
# Starts a throw-away PostgreSQL server on a free loopback port for the tests, and stops it.
#   source .ci/postgres.sh && pg_test_start   → exports LEDGERLOOP_TEST_PG_URL (and PG_TEST_DIR)
#   pg_test_stop                              → stops the server and deletes its data directory
# initdb refuses to run as root, so as root the server runs as the `postgres` user (created by
# Debian's package); as any other user it runs as that user. Nothing here needs a password: the
# server only listens on 127.0.0.1 and a private socket directory. TCP logins need the password
# (scram-sha-256, a random one per server, in the URL), so a test can check a refused password;
# the socket trusts, for the administrator only.

pg_test_bin() {
  # Debian installs the binaries outside PATH (/usr/lib/postgresql/<v>/bin).
  local name=$1 d
  if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/$name" ] && { echo "$d/$name"; return 0; }
  done
  return 1
}

pg_test_as() {
  # Runs a command as the user that owns the server.
  if [ "$(id -u)" = 0 ]; then
    if command -v runuser >/dev/null 2>&1; then runuser -u postgres -- "$@"
    else setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; fi
  else
    "$@"
  fi
}

pg_test_free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

pg_test_start() {
  local initdb pg_ctl port
  initdb=$(pg_test_bin initdb) && pg_ctl=$(pg_test_bin pg_ctl) || { echo "postgres: initdb/pg_ctl not found; the PostgreSQL suites will skip"; return 1; }
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    echo "postgres: running as root and there is no postgres user to run the server as; the PostgreSQL suites will skip"; return 1
  fi
  PG_TEST_DIR=$(mktemp -d /tmp/ll-pg.XXXXXX)
  chmod 755 "$PG_TEST_DIR"
  [ "$(id -u)" = 0 ] && chown postgres "$PG_TEST_DIR"
  port=$(pg_test_free_port)
  local password
  password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
  printf '%s\n' "$password" >"$PG_TEST_DIR/pwfile"
  [ "$(id -u)" = 0 ] && chown postgres "$PG_TEST_DIR/pwfile"
  pg_test_as "$initdb" --auth-local=trust --auth-host=scram-sha-256 --pwfile="$PG_TEST_DIR/pwfile" -U postgres -D "$PG_TEST_DIR/data" >"$PG_TEST_DIR/initdb.log" 2>&1 || { cat "$PG_TEST_DIR/initdb.log"; return 1; }
  rm -f "$PG_TEST_DIR/pwfile"
  pg_test_as "$pg_ctl" -D "$PG_TEST_DIR/data" -l "$PG_TEST_DIR/server.log" \
    -o "-p $port -k $PG_TEST_DIR -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off" -w start >/dev/null || { cat "$PG_TEST_DIR/server.log"; return 1; }
  export PG_TEST_DIR
  export LEDGERLOOP_TEST_PG_URL="postgres://postgres:$password@127.0.0.1:$port/postgres"
  echo "postgres: test server on 127.0.0.1:$port (LEDGERLOOP_TEST_PG_URL)"
}

pg_test_stop() {
  [ -n "${PG_TEST_DIR:-}" ] && [ -d "$PG_TEST_DIR/data" ] || return 0
  pg_test_as "$(pg_test_bin pg_ctl)" -D "$PG_TEST_DIR/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$PG_TEST_DIR"
}
