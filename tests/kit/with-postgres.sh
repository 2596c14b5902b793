#!/bin/sh
# Run a command (the test suite) beside a PostgreSQL cluster of its own, named to it in
# MATCHLOBBY_TEST_POSTGRES: initdb and pg_ctl (as the postgres user when run as root: they
# refuse root) in a temporary folder, listening on a Unix socket there only, stopped and
# removed when the command ends. Without PostgreSQL the command runs alone (the tests that
# need it are skipped with the reason).
set -u
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bindir" ] && command -v pg_ctl >/dev/null 2>&1; then
  bindir=$(dirname "$(command -v pg_ctl)")
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/pg_ctl" ]; then
  echo "note: PostgreSQL is not installed (as root: apt-get install postgresql); its tests will be skipped"
  exec "$@"
fi
dir=$(mktemp -d /tmp/matchlobby-pg.XXXXXX)
as_pg=""
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$dir"
  as_pg="runuser -u postgres --"
fi
stop() {
  $as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM
$as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C \
  >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log"; exit 1; }
# No fsync: the tests kill processes, never the machine.
$as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "-c listen_addresses='' \
  -c unix_socket_directories='$dir' -c fsync=off -c full_page_writes=off -c max_connections=300" \
  start >/dev/null || { cat "$dir/log"; exit 1; }
MATCHLOBBY_TEST_POSTGRES="postgresql://postgres@/postgres?host=$dir"
export MATCHLOBBY_TEST_POSTGRES
"$@"
