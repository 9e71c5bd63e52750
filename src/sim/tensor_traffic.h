// The tensor-parallel collectives of one training step on one rank, as the
// engine's model issues them (src/model/gpt.h: Megatron-LM's f and g
// operators, Shoeybi et al. 2019, section 3): per micro-batch and block, an
// all-reduce of the [micro-batch x sequence, channels] activations after
// each of the two row-parallel projections in forward, again in each block
// whose forward is recomputed, and of the gradient of each column-parallel
// projection's input in backward. Each is a flat all-reduce over the rank's
// tensor-parallel group (the mesh's tensor level), on the compute's critical
// path: Phase::tensor. The vocabulary-parallel embedding sums its lookup
// and the head its input's gradient (two more all-reduces per micro-batch),
// and the loss gathers the rows' maxima and sums two statistics per row.
// With sequence parallelism (MeshShape::sp) each all-reduce of activations
// becomes an all-gather and a reduce-scatter of 1/tp of them per member
// (the embedding's and the head's: a reduce-scatter), the backward of a
// column-parallel region gathers its saved input again, the head's input
// and the embedding's gradient are gathered once per micro-batch, and the
// norms' weight gradients are summed (src/model/gpt.h says where each is
// issued). When the group outnumbers the key/value heads, each block's
// backward also sums the shared heads' gradients (tp_kv_grad_elements) over
// the group, once per micro-batch.
#pragma once
#include <vector>

#include "sim/op_list.h"
#include "sim/traffic_model.h"
#include "tierzero/mesh_shape.h"
#include "tierzero/simulator.h"

namespace tierzero {

// The blocks per micro-batch whose forward runs again in backward, with its
// two all-reduces: full recomputation every block, every:N one in N.
// Selective recomputation (Megatron-LM's: the attention core only) and
// torchtitan's per-op policy (which saves the collectives' outputs) redo none.
double blocks_recomputed_with_collectives(const GptConfig& model, const Recompute& r);

// The step's tensor-parallel transfers of world rank `me` of `world`
// (none at tp = 1): `activation_bytes` per element.
std::vector<HopTransfer> tensor_transfers(const SimInput& in, const Topology& world, int me, int seq_len);

// The seconds of the step's tensor-parallel collectives that an engine
// which overlaps them (EngineProfile::tensor_overlap) hides under compute:
// per block and micro-batch, each of the backward's two input-gradient
// collectives (q|k|v's and the MLP's first projection's: an all-reduce, or
// a reduce-scatter with sequence parallelism) under its layer's
// weight-gradient GEMM, and with sequence parallelism each of the two
// gathers of the saved norm outputs (the weight gradients' operands) under
// its layer's input-gradient GEMM, for as long as that GEMM runs
// (src/model/gpt.h, TpGroup). With sequence parallelism and
// EngineProfile::tp_comm_overlap, also each of the block's other gathers
// and reduce-scatters under the GEMM beside it (Transformer Engine's
// userbuffers, transformer_engine/pytorch/module/base.py initialize_ub): in
// forward the two norms' gathers under q|k|v's and the MLP's first GEMM,
// the two projections' reduce-scatters under theirs; in backward the two
// outputs' gradients gathered under the projections' input-gradient GEMMs.
// `ops`: the micro-batch's op list
// (sim/op_list.h).
double tensor_overlap_hidden(const SimInput& in, const Topology& world, int seq_len, const std::vector<Op>& ops);

}  // namespace tierzero
