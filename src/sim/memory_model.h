// Memory per rank (docs/simulator.md, "Memory"): the plan's states in the
// engine's bytes per parameter (tierzero's engine: its own layouts), the
// gathered units, the saved activations as the engine keeps them
// (FlashAttention keeps no s x s scores; eager attention does), the loss's
// logits, and what the caching allocator and the runtime hold beyond the
// allocated peak. Pure functions.
#pragma once
#include "tierzero/gpt_config.h"
#include "tierzero/simulator.h"

namespace tierzero {

// Bytes per token one block keeps for its backward (its saved activations),
// with the engine's activation dtype and attention, for sequence `seq_len`, the norms as `code` keeps them;
// under tensor parallelism (`tp`) a member keeps its heads' and MLP columns' share of the split ones, and with
// sequence parallelism (`sp`) its 1/tp of the norms' inputs, outputs and statistics.
// The sum of the block's ops' saved bytes (sim/op_list.h), as the memory model counts them.
double block_activation_bytes_per_token(const GptConfig& model, int seq_len, int activation_bytes, bool eager_attention,
                                        const ModelCode& code, int tp = 1, bool sp = false);

// Fills r.memory_bytes, r.memory_total, r.fits, r.largest_allocation, r.at_memory_limit, r.host_bytes and r.file_bytes.
void memory_per_rank(const SimInput& in, const Topology& topo, const GptLayout& layout, int seq_len, SimResult& r);

}  // namespace tierzero
