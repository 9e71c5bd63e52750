# Shared by the emulated cluster's tests (cluster_smoke_test.sh,
# cluster_partition_test.sh): `cluster` (scripts/cluster.sh), and exit 77
# (ctest SKIP_RETURN_CODE) where namespaces or tc are not permitted.
# Sourced, never run.
set -u
cluster="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/cluster.sh"
if [ "$(id -u)" -ne 0 ] || ! "$cluster" check; then
  echo "SKIP: network namespaces, veth/bridges or tc tbf/htb are not permitted here"
  exit 77
fi
