// TEMPORARY (removed in the next commit): the full-model loading paths as
// they were before issue 46, for tests/load_mpi_test.cc to compare the
// unit-by-unit paths against, bit for bit.
#include <algorithm>

#include "sharded/sharded_trainer_impl.h"
#include "tierzero/error.h"

namespace tierzero {

namespace {
// This rank's shard of a full fp32 array under layout s (zeros past each unit).
void slice(const GptLayout& layout, const ShardLayout& s, const float* full, float* out) {
  for (std::size_t u = 0; u < layout.units().size(); ++u) {
    const std::size_t valid = s.valid(layout, static_cast<int>(u));
    const float* src = full + layout.units()[u].offset + s.begin(static_cast<int>(u));
    std::copy(src, src + valid, out + s.offset[u]);
    std::fill(out + s.offset[u] + valid, out + s.offset[u] + s.shard[u], 0.0f);
  }
}

void assign_full(ShardedTrainer::Impl& s, const std::vector<float>& full_master, const std::vector<float>& full_m,
                 const std::vector<float>& full_v) {
  std::vector<float> master(s.states.optim.total), m(master.size()), v(master.size());
  slice(s.layout, s.states.optim, full_master.data(), master.data());
  slice(s.layout, s.states.optim, full_m.data(), m.data());
  slice(s.layout, s.states.optim, full_v.data(), v.data());
  for (std::size_t u = 0; u < s.layout.units().size(); ++u) {
    const std::size_t o = s.states.optim.offset[u];
    s.optim->assign_unit(static_cast<int>(u), master.data() + o, m.data() + o, v.data() + o);
  }
  std::vector<float> p32(s.states.params.total);
  slice(s.layout, s.states.params, full_master.data(), p32.data());
  std::vector<std::byte> params(s.states.params.total * s.dsize);
  from_f32(s.dtype, p32.data(), params.data(), s.states.params.total);
  for (std::size_t u = 0; u < s.layout.units().size(); ++u)
    s.write_param_unit(static_cast<int>(u), params.data() + s.states.params.offset[u] * s.dsize);
}

// The full fp32 master, m and v from every rank's optim file, read whole.
void read_full_optim(CheckpointReader& ckpt, std::vector<float>& master, std::vector<float>& m, std::vector<float>& v) {
  const CheckpointMeta& meta = ckpt.meta();
  const GptLayout layout(meta.model);
  const Topology topo = Topology::parse(meta.topology, meta.world_size);
  const std::size_t n = layout.num_params();
  std::vector<float>* out[3] = {&master, &m, &v};
  for (std::vector<float>* x : out) x->assign(n, 0.0f);
  for (int r = 0; r < meta.world_size; ++r) {
    if (meta.plan.optim && topo.cross_group(*meta.plan.optim, r).front() != r) continue;
    if (!meta.plan.optim && r != 0) continue;
    const ShardLayout s = ShardLayout::make(layout, topo, meta.plan.optim, r);
    const std::string name = rank_file_name(r, "optim");
    std::vector<float> raw(ckpt.file_bytes(name) / sizeof(float));
    ckpt.read_range(name, 0, raw.data(), raw.size() * sizeof(float));
    TZ_CHECK(raw.size() == 3 * s.total, FormatError, "optim shard does not match its plan and topology");
    for (std::size_t u = 0; u < layout.units().size(); ++u) {
      const std::size_t valid = s.valid(layout, static_cast<int>(u));
      const std::size_t dst = layout.units()[u].offset + s.position * s.shard[u];
      for (int k = 0; k < 3; ++k)
        std::copy(raw.data() + k * s.total + s.offset[u], raw.data() + k * s.total + s.offset[u] + valid,
                  out[k]->begin() + static_cast<std::ptrdiff_t>(dst));
    }
  }
}
}  // namespace

void ShardedTrainer::legacy_init_full(const std::vector<float>& init) {
  const std::vector<float> zeros(init.size(), 0.0f);
  assign_full(*impl_, init, zeros, zeros);
}

bool ShardedTrainer::legacy_load_checkpoint(const std::string& path) {
  Impl& s = *impl_;
  CheckpointReader ckpt(path);
  const CheckpointMeta& meta = ckpt.meta();
  const bool same_layout = meta.world_size == s.world.size() && Topology::parse(meta.topology, meta.world_size) == s.world.topology() &&
                           meta.plan.same_sharding(s.plan) && meta.train.param_dtype == s.dtype;
  if (same_layout) {
    s.read_own_shards(ckpt);
  } else {
    std::vector<float> master, m, v;
    read_full_optim(ckpt, master, m, v);
    assign_full(s, master, m, v);
  }
  s.step = meta.step;
  s.optim_steps = meta.optim_steps;
  s.loss_scale = s.dtype == DType::f16 ? (meta.train.param_dtype == DType::f16 ? meta.loss_scale : initial_loss_scale(s.cfg)) : 1.0f;
  s.good_steps = meta.good_steps;
  s.mem.zero(s.grads.data(), s.grads.bytes());
  s.mem.fence();
  return !same_layout;
}

}  // namespace tierzero
