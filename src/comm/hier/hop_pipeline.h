// Runs a HopPlan's stages over its chunks as a pipeline of waves: in wave t,
// stage st works on chunk t - st. A wave first issues its transfers
// (non-blocking collectives, each on its hop's communicator), then runs its
// local stages (reordering, quantising, summing) while they move, then waits
// for them. So chunk i's outer hop moves beside chunk i+1's inner hop, and
// one chunk's quantiser runs under the others' transfers; a stage's output
// lives from its wave to the next, which is why the plan gives it a buffer
// for even and one for odd chunks. A whole plan (one chunk) runs its stages
// one after the other. Every rank runs the same waves, so each hop's
// communicator sees its collectives in one order on all its members.
//
// issue(st, c) posts transfer stage st of chunk c and returns its Request;
// local(st, c) does local stage st of chunk c.
#pragma once
#include <algorithm>
#include <array>

#include "comm/hier/hop_state.h"

namespace tierzero {

template <class Issue, class Local>
void run_pipeline(HopState& s, const HopPlan& p, Issue&& issue, Local&& local) {
  s.reserve(p);
  const std::size_t n = p.num_chunks(), m = p.num_stages();
  constexpr std::size_t kMaxTransfers = 2 * kNumLevels;  // an all-reduce's: a reduce-scatter and an all-gather per hop
  std::array<Request, kMaxTransfers> in_flight;
  for (std::size_t t = 0; t + 1 < n + m; ++t) {
    const std::size_t first = t >= n ? t - n + 1 : 0, end = std::min(m, t + 1);  // stages with a chunk this wave
    std::size_t live = 0;
    int phase = phase_index(CommPhase::local);
    for (std::size_t st = first; st < end; ++st) {
      const HopStage& g = p.stage(st, t - st);
      if (!g.transfer) continue;
      in_flight[live++] = issue(st, t - st);
      phase = std::max(phase, collective_phase(*s.hops[g.hop]));
    }
    for (std::size_t st = first; st < end; ++st)
      if (!p.stage(st, t - st).transfer) local(st, t - st);
    if (live == 0) continue;
    if (s.clock) s.clock->enter(phase);  // the wave lasts as long as its outermost hop, roughly
    for (std::size_t i = 0; i < live; ++i) in_flight[i].wait();
    if (s.clock) s.clock->enter(phase_index(CommPhase::local));
  }
}

}  // namespace tierzero
