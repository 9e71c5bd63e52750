#!/usr/bin/env bash
# An emulated multi-node cluster with a real bandwidth hierarchy, on one
# machine, from Linux network namespaces:
#   package  = one namespace holding GPUS ranks (shared memory between them)
#   node     = NODE_PKGS packages joined by a bridge; each package's link to
#              it carries NODE_RATE (tc, both directions)
#   world    = the node bridges joined by one link per node; where the world
#              traffic is shaped is NIC's choice:
#     NIC=package (default)  each package has its own NIC of WORLD_RATE /
#              NODE_PKGS, apart from its node link (Frontier's layout: one
#              Slingshot NIC per MI250X, beside the Infinity Fabric between
#              the packages; OLCF's Frontier user guide, "System Overview"):
#              the package's interface is shaped per class (tc htb), traffic
#              to and from the node's other packages at NODE_RATE, all the
#              rest at WORLD_RATE / NODE_PKGS; the node's world link is not shaped
#     NIC=node   one NIC per node: the node's world link shaped to WORLD_RATE
#              and shared by its packages, whose world traffic also crosses
#              their node links (tc tbf)
#   Either way a node's world traffic totals at most WORLD_RATE.
# Addresses: 10.77.0.0/24 (packages .1.., this host's port .254), all in
# namespaces this script creates.
#
#   scripts/cluster.sh up      create it (NODES, NODE_PKGS, GPUS, NODE_RATE, WORLD_RATE, NIC from the environment)
#   scripts/cluster.sh down    remove everything it made (also after a failed up)
#   scripts/cluster.sh run -- tierzero ARGS...
#                              mpirun across it, with the matching --topology appended
#   scripts/cluster.sh counters  bytes received so far into every package and node (one JSON line)
#   scripts/cluster.sh check   exit 0 when namespaces, tbf, htb and u32 filters are permitted here
set -euo pipefail
NODES=${NODES:-2}
NODE_PKGS=${NODE_PKGS:-2}
GPUS=${GPUS:-2}
NODE_RATE=${NODE_RATE:-2gbit}
WORLD_RATE=${WORLD_RATE:-400mbit}
NIC=${NIC:-package}
PREFIX=tz
FABRIC=$PREFIX-fabric
STATE=/tmp/$PREFIX-cluster
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

pkg_ns() { echo "$PREFIX-n$1p$2"; }
pkg_ip() { echo "10.77.0.$((1 + $1 * NODE_PKGS + $2))"; }
shape() {  # shape NS DEV RATE
  ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst 256kb latency 50ms
}
kbit() {  # kbit RATE: a tc rate (a whole number of kbit, mbit or gbit, any case) in kbit/s
  local r=${1,,}
  [[ $r =~ ^([0-9]+)(k|m|g)bit$ ]] || { echo "cluster.sh: rate '$1' is not a whole number followed by kbit, mbit or gbit" >&2; return 1; }
  case "${BASH_REMATCH[2]}" in
    g) echo $((BASH_REMATCH[1] * 1000000)) ;;
    m) echo $((BASH_REMATCH[1] * 1000)) ;;
    k) echo $((BASH_REMATCH[1])) ;;
  esac
}
# shape_classes NS DEV MATCH N: a package's link of NIC=package, both classes: packets whose address MATCH (dst or src)
# is one of node N's packages at NODE_RATE, every other packet (the package's NIC) at WORLD_RATE / NODE_PKGS.
shape_classes() {
  local nic q
  nic=$(( $(kbit "$WORLD_RATE") / NODE_PKGS ))kbit
  ip netns exec "$1" tc qdisc replace dev "$2" root handle 1: htb default 20
  ip netns exec "$1" tc class add dev "$2" parent 1: classid 1:10 htb rate "$NODE_RATE" ceil "$NODE_RATE" burst 256kb cburst 256kb quantum 60000
  ip netns exec "$1" tc class add dev "$2" parent 1: classid 1:20 htb rate "$nic" ceil "$nic" burst 256kb cburst 256kb quantum 60000
  for q in $(seq 0 $((NODE_PKGS - 1))); do
    ip netns exec "$1" tc filter add dev "$2" parent 1: protocol ip prio 1 u32 match ip "$3" "$(pkg_ip "$4" "$q")/32" flowid 1:10
  done
}

down() {
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-" || true); do ip netns del "$ns" 2>/dev/null || true; done
  ip link del "$PREFIX-host" 2>/dev/null || true
  rm -rf "$STATE"
}

up() {
  case "$NIC" in package | node) ;; *) echo "cluster.sh: NIC is '$NIC'; it takes package (a NIC per package) or node (one per node)" >&2; exit 2 ;; esac
  [[ $NODES =~ ^[1-9][0-9]*$ && $NODE_PKGS =~ ^[1-9][0-9]*$ && $GPUS =~ ^[1-9][0-9]*$ ]] ||
    { echo "cluster.sh: NODES ($NODES), NODE_PKGS ($NODE_PKGS) and GPUS ($GPUS) must be positive integers" >&2; exit 2; }
  local world
  world=$(kbit "$WORLD_RATE") && kbit "$NODE_RATE" > /dev/null || exit 2
  [ "$NIC" = node ] || [ $((world / NODE_PKGS)) -ge 1 ] ||
    { echo "cluster.sh: WORLD_RATE $WORLD_RATE over $NODE_PKGS packages is under 1 kbit per NIC" >&2; exit 2; }
  command -v ip >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q iproute2; }
  down
  mkdir -p "$STATE"
  ip netns add "$FABRIC"
  ip netns exec "$FABRIC" ip link set lo up
  ip netns exec "$FABRIC" ip link add br-world type bridge
  ip netns exec "$FABRIC" ip link set br-world up
  for n in $(seq 0 $((NODES - 1))); do
    ip netns exec "$FABRIC" ip link add "br-n$n" type bridge
    ip netns exec "$FABRIC" ip link set "br-n$n" up
    # The node's one link to the world, shaped at both ends when it is the node's NIC.
    ip netns exec "$FABRIC" ip link add "up-n$n" type veth peer name "dn-n$n"
    ip netns exec "$FABRIC" ip link set "up-n$n" master "br-n$n" up
    ip netns exec "$FABRIC" ip link set "dn-n$n" master br-world up
    if [ "$NIC" = node ]; then
      shape "$FABRIC" "up-n$n" "$WORLD_RATE"
      shape "$FABRIC" "dn-n$n" "$WORLD_RATE"
    fi
    for p in $(seq 0 $((NODE_PKGS - 1))); do
      ns=$(pkg_ns "$n" "$p")
      ip netns add "$ns"
      ip netns exec "$ns" ip link set lo up
      ip link add "$PREFIX-v$n$p" type veth peer name "$PREFIX-f$n$p"
      ip link set "$PREFIX-v$n$p" netns "$ns"
      ip link set "$PREFIX-f$n$p" netns "$FABRIC"
      ip netns exec "$ns" ip link set "$PREFIX-v$n$p" name eth0
      ip netns exec "$ns" ip addr add "$(pkg_ip "$n" "$p")/24" dev eth0
      ip netns exec "$ns" ip link set eth0 up
      ip netns exec "$FABRIC" ip link set "$PREFIX-f$n$p" master "br-n$n" up
      if [ "$NIC" = node ]; then
        shape "$ns" eth0 "$NODE_RATE"
        shape "$FABRIC" "$PREFIX-f$n$p" "$NODE_RATE"
      else  # out of the package by destination, into it by source
        shape_classes "$ns" eth0 dst "$n"
        shape_classes "$FABRIC" "$PREFIX-f$n$p" src "$n"
      fi
    done
  done
  # This host's port so mpirun can reach the daemons it starts (unshaped on its side; with NIC=package its few
  # control bytes share each package's NIC class).
  ip link add "$PREFIX-host" type veth peer name "$PREFIX-hostf"
  ip link set "$PREFIX-hostf" netns "$FABRIC"
  ip netns exec "$FABRIC" ip link set "$PREFIX-hostf" master br-world up
  ip addr add 10.77.0.254/24 dev "$PREFIX-host"
  ip link set "$PREFIX-host" up
  # Hostfile and launch agent.
  : > "$STATE/hosts"
  for n in $(seq 0 $((NODES - 1))); do for p in $(seq 0 $((NODE_PKGS - 1))); do
    echo "$(pkg_ip "$n" "$p") slots=$GPUS" >> "$STATE/hosts"
    echo "$(pkg_ip "$n" "$p") $(pkg_ns "$n" "$p")" >> "$STATE/map"
  done; done
  cat > "$STATE/agent" <<AGENT
#!/usr/bin/env bash
# Open MPI's remote-launch agent: runs the daemon command in the host's namespace.
while [ "\${1:-}" != "" ] && [ "\${1#-}" != "\$1" ]; do shift; done   # drop ssh-style options
host=\$1; shift
ns=\$(awk -v h="\$host" '\$1 == h {print \$2}' "$STATE/map")
[ -n "\$ns" ] || { echo "cluster agent: unknown host \$host" >&2; exit 1; }
mkdir -p "$STATE/tmp-\$ns"
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$ns; export TMPDIR=$STATE/tmp-\$ns; \$*"
AGENT
  chmod +x "$STATE/agent"
  case "$NIC" in
    package) echo "cluster up: $NODES nodes x $NODE_PKGS packages x $GPUS ranks; node links $NODE_RATE, a NIC per package of $(( $(kbit "$WORLD_RATE") / NODE_PKGS ))kbit ($WORLD_RATE per node)" ;;
    node) echo "cluster up: $NODES nodes x $NODE_PKGS packages x $GPUS ranks; node links $NODE_RATE, a NIC per node of $WORLD_RATE" ;;
  esac
}

topology() { echo "package=$GPUS,node=$NODE_PKGS,world=$NODES"; }

# Bytes received so far, from the interfaces' counters: into every package
# through its link (eth0 in the package's namespace) and into every node
# through its world link (up-nN in the fabric), summed: one JSON line.
counters() {
  [ -f "$STATE/hosts" ] || { echo "cluster.sh: the cluster is not up (scripts/cluster.sh up)" >&2; exit 2; }
  local pkg=0 node=0 n p
  for n in $(seq 0 $((NODES - 1))); do
    node=$((node + $(ip netns exec "$FABRIC" cat "/sys/class/net/up-n$n/statistics/rx_bytes")))
    for p in $(seq 0 $((NODE_PKGS - 1))); do
      pkg=$((pkg + $(ip netns exec "$(pkg_ns "$n" "$p")" cat /sys/class/net/eth0/statistics/rx_bytes)))
    done
  done
  echo "{\"package_rx_bytes\": $pkg, \"node_rx_bytes\": $node, \"packages\": $((NODES * NODE_PKGS)), \"nodes\": $NODES}"
}

run() {
  [ -f "$STATE/hosts" ] || { echo "cluster.sh: the cluster is not up (scripts/cluster.sh up)" >&2; exit 2; }
  local np=$((NODES * NODE_PKGS * GPUS))
  local cmd=("$@")
  [ "${cmd[0]}" = tierzero ] && cmd[0]="$ROOT/build/tierzero"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --hostfile "$STATE/hosts" -np "$np" \
    --mca plm_rsh_agent "$STATE/agent" --mca btl tcp,self,vader --mca mpi_yield_when_idle 1 \
    --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
    -x MALLOC_MMAP_MAX_=0 -x MALLOC_TRIM_THRESHOLD_=17179869184 -x OPENBLAS_NUM_THREADS=1 \
    "${cmd[@]}" --topology "$(topology)"
}

check() {
  ip netns add "$PREFIX-probe" 2>/dev/null || return 1
  local ok=0
  ip netns exec "$PREFIX-probe" ip link add p0 type veth peer name p1 2>/dev/null &&
    ip netns exec "$PREFIX-probe" ip link add b0 type bridge 2>/dev/null &&
    ip netns exec "$PREFIX-probe" tc qdisc add dev p0 root tbf rate 1gbit burst 32kb latency 50ms 2>/dev/null &&
    ip netns exec "$PREFIX-probe" tc qdisc add dev p1 root handle 1: htb default 20 2>/dev/null &&
    ip netns exec "$PREFIX-probe" tc class add dev p1 parent 1: classid 1:10 htb rate 1mbit 2>/dev/null &&
    ip netns exec "$PREFIX-probe" tc filter add dev p1 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.1/32 flowid 1:10 2>/dev/null || ok=1
  ip netns del "$PREFIX-probe"
  return $ok
}

case "${1:-}" in
  up) trap 'echo "cluster.sh: up failed; removing what it made" >&2; down' ERR; up ;;
  down) down ;;
  run) shift; [ "${1:-}" = -- ] && shift; run "$@" ;;
  counters) counters ;;
  check) check ;;
  *) sed -n '2,/^set -euo/{/^set -euo/!p}' "$0"; exit 2 ;;
esac
