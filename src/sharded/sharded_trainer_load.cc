// Loading the engine's state unit by unit (ShardedTrainer::Impl): from a
// full-state source (weights, a seed, a checkpoint of another layout) each
// rank reads only the slices of its own shards; from a checkpoint of this
// run's layout, its own two files. Besides its shards a rank holds one
// unit's slices at a time, never the whole model.
#include <algorithm>

#include "ckpt/state_checkpoint.h"
#include "ckpt/tp_member_reader.h"
#include "core/scratch_buffer.h"
#include "sharded/sharded_trainer_impl.h"
#include "tierzero/error.h"

namespace tierzero {

void ShardedTrainer::Impl::initialise_weights(StateReader* init) {
  std::unique_ptr<StateReader> seeded;
  if (!init) seeded = seeded_weights(cfg.model, cfg.seed), init = seeded.get();
  std::string problem;
  try {
    fill_from_whole(*init);
  } catch (const Error& e) {
    problem = e.message();
  }
  problem = first_problem(problem);  // every rank fails alike, with the first rank's reason
  TZ_CHECK(problem.empty(), FormatError, problem);
}

void ShardedTrainer::Impl::fill_from_whole(StateReader& whole) {
  if (layout.tp().size == 1) return fill_shards(whole);
  const auto member = tp_member_reader(whole, layout);
  fill_shards(*member);
}

void ShardedTrainer::Impl::fill_shards(StateReader& from) {
  const ShardLayout &o = states.optim, &p = states.params;
  // One unit's slices at a time, in mappings of their own (given back when loading ends). A source without
  // moments reads none: m and v are one buffer of zero pages, which reading does not make resident.
  const bool moments = from.has_moments();
  ScratchBuffer<float> master(o.largest_shard()), m(moments ? master.size() : 0), v(m.size()), zeros(moments ? 0 : master.size());
  ScratchBuffer<float> p32(p.largest_shard());  // written only where the working slice is not inside the master slice
  ScratchBuffer<std::byte> bytes(p.largest_shard() * dsize);
  for (int u = 0; u < static_cast<int>(layout.units().size()); ++u) {
    read_unit_shard(from, StatePart::master, layout, o, u, master.data());
    if (moments) {
      read_unit_shard(from, StatePart::m, layout, o, u, m.data());
      read_unit_shard(from, StatePart::v, layout, o, u, v.data());
    }
    optim->assign_unit(u, master.data(), moments ? m.data() : zeros.data(), moments ? v.data() : zeros.data());
    // The working parameters' slice (another partition's, or the unit whole), from the master slice when it holds it.
    const std::size_t first = o.begin(u), pfirst = p.begin(u), pvalid = p.valid(layout, u), pn = p.shard[static_cast<std::size_t>(u)];
    if (pfirst >= first && pfirst + pvalid <= first + o.valid(layout, u)) {
      from_f32(dtype, master.data() + (pfirst - first), bytes.data(), pvalid);
      std::fill(bytes.data() + pvalid * dsize, bytes.data() + pn * dsize, std::byte{0});  // padding: the zeros' bits in every dtype
    } else {
      read_unit_shard(from, StatePart::master, layout, p, u, p32.data());
      from_f32(dtype, p32.data(), bytes.data(), pn);
    }
    write_param_unit(u, bytes.data());
  }
}

void ShardedTrainer::Impl::read_own_shards(CheckpointReader& ckpt) {
  const int r = me();
  const std::string params_file = rank_file_name(r, "params"), optim_file = rank_file_name(r, "optim");
  const std::size_t total = states.optim.total;
  TZ_CHECK(ckpt.file_bytes(params_file) == states.params_bytes(dtype) && ckpt.file_bytes(optim_file) == 3 * total * sizeof(float),
           FormatError, "checkpoint '" + ckpt.dir() + "': rank " + std::to_string(r) + "'s shards do not match this run's layout");
  ScratchBuffer<std::byte> params(states.params.largest_shard() * dsize);
  ScratchBuffer<float> optim3(3 * states.optim.largest_shard());
  for (std::size_t u = 0; u < layout.units().size(); ++u) {
    ckpt.read_range(params_file, states.params.offset[u] * dsize, params.data(), states.params.shard[u] * dsize);
    write_param_unit(static_cast<int>(u), params.data());
    const std::size_t n = states.optim.shard[u];
    for (std::size_t k = 0; k < 3; ++k)  // the file holds every unit's master, then m, then v
      ckpt.read_range(optim_file, (k * total + states.optim.offset[u]) * sizeof(float), optim3.data() + k * n, n * sizeof(float));
    optim->assign_unit(static_cast<int>(u), optim3.data(), optim3.data() + n, optim3.data() + 2 * n);
  }
}

void ShardedTrainer::Impl::write_param_unit(int u, const std::byte* shard) {
  mem.upload(params_store->writable(u), shard, states.params.shard[static_cast<std::size_t>(u)] * dsize);
  params_store->commit(u);
  keep_whole_for_backward(u, shard, true);
}

std::string ShardedTrainer::Impl::first_problem(const std::string& mine) {
  const std::size_t ranks = static_cast<std::size_t>(mesh.world().size());
  const std::uint64_t length = mine.size();
  std::vector<std::uint64_t> lengths(ranks);
  control_gather(&length, lengths.data(), sizeof length);
  const std::uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  if (longest == 0) return "";
  std::string padded = mine, all(longest * ranks, '\0');
  padded.resize(longest, '\0');
  control_gather(padded.data(), all.data(), longest);
  for (std::size_t k = 0; k < ranks; ++k)
    if (lengths[k] > 0) return all.substr(k * longest, lengths[k]);
  return "";
}

}  // namespace tierzero
