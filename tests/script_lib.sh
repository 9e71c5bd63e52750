# Shared by the test scripts that run the CLI: TIERZERO and MPIRUN from $1
# and $2, a scratch folder removed on exit, and pass/fail bookkeeping (the
# script ends with `exit $fail`). Sourced, never run.
set -u
tz=$1
mpirun=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
