// What one hop of a collective costs on a system (docs/simulator.md): its
// time, and the bytes it moves through physical links. Used by
// simulate() and collective_time (simulator.cc).
#pragma once
#include "sim/traffic_model.h"
#include "tierzero/system.h"

namespace tierzero {

// The time of one hop of one collective (docs/simulator.md): transfer_s
// from the bytes per level and the system's links (ring or direct),
// latency_s: a ring's steps each at its level's latency, other algorithms
// (hop size - 1) x the slowest level's; bottleneck is the level whose link
// sets transfer_s, latency_level the one that adds the most latency.
struct HopTime {
  double transfer_s = 0, latency_s = 0;
  int bottleneck = 0;     // the level that sets transfer_s
  int latency_level = 0;  // the level whose latency sets latency_s
};
HopTime hop_time(const HopTransfer& h, const Topology& topo, const System& sys);

// The bytes one hop moves into one group(boundary) — a package through its
// links (boundary package), a node through its network interfaces
// (boundary node) — averaged over the groups, as the collective library
// routes them (hop_time.cc gives the formulas). The
// traffic counters count logical bytes per rank; these are what interface
// counters see.
double hop_ingress(const HopTransfer& h, const Topology& topo, const System& sys, Level boundary);

}  // namespace tierzero
