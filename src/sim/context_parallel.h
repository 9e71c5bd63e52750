// Context parallelism priced (tierzero/simulator.h, ContextShape): the
// checks a job's context-parallel group must pass, the bytes its exchanges
// move, and their time beside the attention they serve (docs/simulator.md,
// "Context parallelism"). The compute and memory at seq/cp tokens are the
// op list's (sim/op_list.h, OpOptions::cp).
#pragma once
#include <cstdint>

#include "sim/traffic_model.h"
#include "tierzero/simulator.h"

namespace tierzero {

// Ring: the bytes a member receives in one step of the forward ring, the
// keys and values of seq/cp tokens: 2 x kv_heads/tp x head_size x
// micro_batch x seq/cp x the engine's activation bytes (the backward ring
// moves twice that: the gradients dK and dV travel with them); kv_heads/tp is
// a member's key/value heads (tp_local_kv: a head shared whole where tp exceeds them).
std::uint64_t ring_step_bytes(const SimInput& in, int seq_len);

// a2a: the bytes a member receives in one all-to-all of `width` channels per
// token (q and the output: heads x head_size / tp; k and v: kv_heads x
// head_size / tp): its micro_batch x seq/cp x width elements, all but its
// own 1/cp of them, in the engine's activation bytes (kv_heads/tp: tp_local_kv).
std::uint64_t ulysses_bytes(const SimInput& in, int seq_len, std::uint64_t width);

// The attention blocks per micro-batch whose forward runs (again) in
// backward, each with its exchange: full every block, every:N one in N,
// selective every block (the attention core is recomputed), torchtitan's
// selective-op none (it keeps the attention's output).
double attention_recomputed_blocks(const GptConfig& model, const Recompute& r);

// Prices the step's exchanges of `in` (a pipeline's stage, or the job) into
// r: context_comm_s, context_exposed_s, and the per-level times, bytes and
// calls. Ring: per attention block, cp - 1 transfers of ring_step_bytes
// (forward and recomputed) or twice that (backward) on the context level,
// each overlapped with one of the block's cp attention kernels: exposed
// max(0, transfer - kernel). a2a: per block, four all-to-alls forward (q, k,
// v, the output; again where recomputed) and four backward, all exposed.
void price_context(const SimInput& in, int seq_len, SimResult& r);

}  // namespace tierzero
