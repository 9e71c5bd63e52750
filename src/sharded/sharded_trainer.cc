#include "tierzero/sharded_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>

#include "tierzero/error.h"
#include "tierzero/flight_recorder.h"
#include "sharded/faults.h"
#include "sharded/sharded_trainer_impl.h"

namespace tierzero {

namespace {
std::size_t max_padded_unit(const GptLayout& layout, const ShardLayout& s) {
  std::size_t m = 0;
  for (std::size_t u = 0; u < layout.units().size(); ++u) m = std::max(m, s.shard[u] * s.group_size);
  return m;
}

// The model's tensor-parallel collectives (none at tp = 1) on `lane` (made before the first step), the training thread's
// waits for them measured by `meter` as tensor waits.
TpGroup<float> tp_group(const Mesh& mesh, const std::unique_ptr<TensorLane>& lane, const std::unique_ptr<WaitMeter>& meter) {
  if (!mesh.tensor()) return {};
  const auto* l = &lane;
  const auto* m = &meter;
  const auto waited = [m](auto&& f) { (*m)->measure(WaitMeter::Wait::tensor, f); };
  return {[l, waited](float* buf, std::size_t n) { waited([&] { (*l)->sum(buf, n); }); },
          [l, waited](const float* send, float* recv, std::size_t n) { waited([&] { (*l)->all_gather(send, recv, n); }); },
          [l, waited](const float* send, float* recv, std::size_t n) { waited([&] { (*l)->reduce_scatter(send, recv, n); }); },
          mesh.shape().sp,
          [l](float* buf, std::size_t n) { (*l)->start_sum(buf, n); },
          [l](const float* send, float* recv, std::size_t n) { (*l)->start_all_gather(send, recv, n); },
          [l](const float* send, float* recv, std::size_t n) { (*l)->start_reduce_scatter(send, recv, n); },
          [l, waited] { waited([&] { (*l)->finish(); }); }};
}
}  // namespace

std::unique_ptr<Communicator> ShardedTrainer::Impl::group_comm(const Partition& level) {
  return level ? mesh.data().split(*level) : nullptr;
}

ShardedTrainer::Impl::Impl(const TrainConfig& c, const Plan& pl, const Mesh& m, const TokenData& data, StateReader* init,
                           const Backend& be)
    : cfg(c),
      plan(pl),
      mesh(m),
      mem(*be.memory),
      ops(*be.ops),
      step_ops(*be.step),
      layout(c.model, TpShard{m.tp(), m.tp_rank()}),
      sampler(data, c.effective_seq_len(), c.seed),
      model(be.make_model(layout, c, tp_group(m, tensor_lane, meter))),
      dtype(c.param_dtype),
      dsize(dtype_size(c.param_dtype)),
      control(m.world().host()) {
  cfg.validate();
  plan.validate(mesh.data_topology());
  TZ_CHECK(data.vocab() <= static_cast<std::uint32_t>(cfg.model.vocab), ConfigError,
           "data '" + data.origin() + "' has vocabulary " + std::to_string(data.vocab()) + " but the model's is " +
               std::to_string(cfg.model.vocab));
  if (cfg.schedule.total <= 0) cfg.schedule.total = cfg.steps;
  if (dtype == DType::f16) loss_scale = initial_loss_scale(cfg);
  sampler_origin = data.origin();
  states = StateLayouts::make(layout, mesh.data_topology(), plan, mesh.data_rank());
  build_communicators(be.concurrent_queues);
  allocate_states();
  initialise_weights(init);
  forward_units = layout.forward_order();
  backward_units = layout.backward_order();
  reduce_order = layout.reduce_order();
  fetcher = std::make_unique<UnitFetcher>(layout, dtype, fetch_slot_sizes(layout, states, plan.prefetch), mem, ops, *meter);
  reducer = std::make_unique<GradReducer>(layout, GradReducer::Spec::of(plan), states.grads, dtype, reduce_order, *g_hier,
                                          cross_comm.get(), *reduce_schedule, grads.data(), mem, ops, *meter);
  // A tied head uses wte at the head: the embedding is held whole for the step, with its gradient. An untied one
  // reads the embedding once, at the start, and writes its gradient last, through unit_grad.
  const std::size_t n_embed = cfg.model.tied ? layout.units()[layout.embed_unit()].numel : 0;
  embed_params.resize(mem, n_embed), embed_grads.resize(mem, n_embed), unit_grad.resize(mem, unit_grad_elements(layout, cfg.model.tied));
  tokens.resize(static_cast<std::size_t>(cfg.micro_batch) * cfg.effective_seq_len());
  targets.resize(tokens.size());
  tokens_mem.resize(mem, tokens.size()), targets_mem.resize(mem, tokens.size());
}

// One hierarchy per group (forward gathers, backward gathers, gradient
// reductions), the gathers issuing through one schedule and the reductions
// through the other (or the same); the cross group's all-reduce when
// gradients are partitioned below the world. All over the data-parallel ranks.
void ShardedTrainer::Impl::build_communicators(bool concurrent_queues) {
  Communicator& data = mesh.data();
  const Topology& topo = mesh.data_topology();
  const int me = mesh.data_rank();
  const HopSpec gather_hops = hop_spec(plan.gather), reduce_hops = hop_spec(plan.reduce);
  schedule = std::make_unique<CommSchedule>(mem);
  if (cfg.comm_queues == 2 && concurrent_queues) own_reduce_schedule = std::make_unique<CommSchedule>(mem);
  reduce_schedule = own_reduce_schedule ? own_reduce_schedule.get() : schedule.get();
  std::vector<const ExecClock*> clocks = {&schedule->clock(), &reduce_schedule->clock()};
  if (mesh.tensor()) {
    tensor_lane = std::make_unique<TensorLane>(*mesh.tensor(), mem, concurrent_queues ? nullptr : schedule.get());
    if (tensor_lane->owns_schedule()) clocks.push_back(&tensor_lane->clock());
  }
  meter = std::make_unique<WaitMeter>(clocks);
  if (plan.params) {
    p_comm = group_comm(plan.params);
    p_hier = std::make_unique<Hierarchy>(*p_comm, gather_hops, mem, ops, schedule.get());
  }
  if (states.bwd_distinct && plan.bwd_params) {
    b_comm = group_comm(plan.bwd_params);
    b_hier = std::make_unique<Hierarchy>(*b_comm, gather_hops, mem, ops, schedule.get());
  }
  g_comm = plan.grads ? group_comm(plan.grads) : data.split(Level::world);
  g_hier = std::make_unique<Hierarchy>(*g_comm, reduce_hops, mem, ops, reduce_schedule);
  for (Hierarchy* h : {p_hier.get(), b_hier.get(), g_hier.get()})
    if (h) h->set_chunk_bytes(plan.hop_chunk_bytes);
  if (plan.grads && *plan.grads != Level::world) cross_comm = data.cross(*plan.grads);
  counts_norm = plan.grads ? topo.cross_group(*plan.grads, me).front() == me : me == 0;
  if (mesh.tp() > 1) norm_segments = tierzero::norm_segments(layout, states.grads);
}

double ShardedTrainer::Impl::grad_sum_squares() {
  if (!counts_norm) return 0.0;
  if (mesh.tp() == 1) return step_ops.sum_squares(grads.data(), grads.size());
  double sq = 0;
  for (const ShardSegment& s : norm_segments) sq += step_ops.sum_squares(grads.data() + s.offset, s.length);
  return sq;
}

// The states' buffers, as StateLayouts sizes them (what the memory model
// reports), and the buffers that rebuild replicated params from optim shards.
void ShardedTrainer::Impl::allocate_states() {
  segments = shard_segments(layout, states.optim);
  const int rank = me();  // names this rank's swap files
  optim = make_optim_store(plan, states.optim, segments, mem, step_ops, rank);
  grads.resize(mem, states.grads.total);
  mem.zero(grads.data(), grads.bytes());
  params_store = make_param_store(plan.param_offload, states.params, dtype, mem, plan.prefetch, rank);
  if (states.bwd_distinct) {  // the backward copy of offloaded params stays on the host, never in a file
    const OffloadPlacement bwd_place{plan.param_offload.offloaded() ? Offload::cpu : Offload::none, "", 2};
    bwd_store = make_param_store(bwd_place, states.bwd_params, dtype, mem, plan.prefetch, rank);
  }
  // Replicated params, and units held whole, are rebuilt from the optim shards after each step.
  std::size_t max_shard = 0, max_padded = 0;
  for (std::size_t u = 0; u < layout.units().size(); ++u)
    if (plan.rebuilt_after_update(layout.units()[u].numel)) {
      max_shard = std::max(max_shard, states.optim.shard[u]);
      max_padded = std::max(max_padded, states.optim.shard[u] * states.optim.group_size);
    }
  gather_send.resize(mem, max_shard * dsize);
  gather_recv.resize(mem, max_padded * dsize);
}

void ShardedTrainer::Impl::keep_whole_for_backward(int u, const std::byte* whole, bool upload) {
  if (!states.bwd_distinct || !states.params.whole[u]) return;
  std::byte* dst = bwd_store->writable(u);
  const std::size_t bytes = layout.units()[u].numel * dsize;
  upload ? mem.upload(dst, whole, bytes) : mem.copy(dst, whole, bytes);
  bwd_store->commit(u);
}

int ShardedTrainer::Impl::me() const { return mesh.world().world_rank(mesh.world().rank()); }

void ShardedTrainer::Impl::control_sum(float* values, std::size_t n) {
  Request r = reduce_schedule->iall_reduce(control, host_memory(), values, values, n, DType::f32, ReduceOp::sum);
  meter->wait(WaitMeter::Wait::control, r);
}

void ShardedTrainer::Impl::control_gather(const void* in, void* out, std::size_t bytes) {
  Request r = reduce_schedule->iall_gather(control, host_memory(), in, out, bytes, DType::u8);
  meter->wait(WaitMeter::Wait::control, r);
}

double ShardedTrainer::Impl::slot_waits() const {
  const double own = own_reduce_schedule ? own_reduce_schedule->submit_blocked_seconds() : 0.0;
  const double tensor = tensor_lane ? tensor_lane->submit_blocked_seconds() : 0.0;
  return schedule->submit_blocked_seconds() + own + tensor;
}

template <class F>
void ShardedTrainer::Impl::timed(double& into, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  const double waited = meter->blocked_total() + slot_waits();
  f();
  into += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - (meter->blocked_total() + slot_waits() - waited);
}

UnitSource ShardedTrainer::Impl::source(const ShardLayout& s, ParamStore& store, Hierarchy* h, int bits, FlightPhase phase) const {
  return UnitSource{h, &store, &s, bits, plan.quant_block, phase};
}

double ShardedTrainer::Impl::forward(bool keep) {
  mem.upload(tokens_mem.data(), tokens.data(), tokens_mem.bytes());
  mem.upload(targets_mem.data(), targets.data(), targets_mem.bytes());
  const std::size_t n = forward_units.size();
  // Embed, blocks, head; keep the secondary slices when bwd_params is narrower.
  const SecondaryStore slices{bwd_store.get(), &states.bwd_params};
  fetcher->begin(forward_units, source(states.params, *params_store, p_hier.get(), plan.weight_bits, FlightPhase::forward_gather),
                 keep && states.bwd_distinct && plan.params ? &slices : nullptr);
  flight_activity(FlightActivity::forward, forward_units[0]);
  const float* embed = fetcher->get(0);
  if (cfg.model.tied) mem.copy(embed_params.data(), embed, embed_params.bytes());  // kept for the head
  model->embed_forward(embed, tokens_mem.data());
  fetcher->release(0);
  for (std::size_t i = 1; i + 1 < n; ++i) {
    flight_activity(FlightActivity::forward, forward_units[i]);
    model->block_forward(static_cast<int>(i) - 1, fetcher->get(i));
    if (i == 1 && faults().stalls(StallSite::compute, me(), step + 1)) stall_forever();  // fault injection: before the next prefetch
    fetcher->release(i);
  }
  flight_activity(FlightActivity::forward, forward_units[n - 1]);
  const double loss = model->head_forward(tied_embed(), fetcher->get(n - 1), targets_mem.data());
  fetcher->release(n - 1);
  return loss;
}

double ShardedTrainer::Impl::micro_batch(int micro, float dloss) {
  double loss = 0;
  flight_step(step + 1, micro);
  timed(breakdown.forward_s, [&] {
    flight_activity(FlightActivity::data_load);
    sampler.fill(static_cast<std::uint64_t>(step), micro, mesh.data_rank() * cfg.micro_batch, cfg.micro_batch, tokens.data(), targets.data());
    loss = forward(true);
  });
  timed(breakdown.backward_s, [&] { backward(dloss); });
  return loss;
}

// Backward: head, blocks in reverse, embed; each unit's gradient goes to its bucket.
void ShardedTrainer::Impl::backward(float dloss) {
  const int* tok = tokens_mem.data();
  const int* tgt = targets_mem.data();
  if (states.bwd_distinct)
    fetcher->begin(backward_units, source(states.bwd_params, *bwd_store, b_hier.get(), 16, FlightPhase::backward_gather));
  else
    fetcher->begin(backward_units, source(states.params, *params_store, p_hier.get(), plan.weight_bits, FlightPhase::backward_gather));
  flight_activity(FlightActivity::backward, layout.head_unit());
  mem.zero(embed_grads.data(), embed_grads.bytes());
  mem.zero(unit_grad.data(), layout.units()[layout.head_unit()].numel * sizeof(float));
  model->head_backward(tied_embed(), fetcher->get(0), cfg.model.tied ? embed_grads.data() : nullptr, unit_grad.data(), tgt, dloss);
  fetcher->release(0);
  reducer->add(layout.head_unit(), unit_grad.data());
  for (std::size_t i = 1; i < backward_units.size(); ++i) {
    const int u = backward_units[i];
    flight_activity(FlightActivity::backward, u);
    mem.zero(unit_grad.data(), layout.units()[u].numel * sizeof(float));
    model->block_backward(cfg.model.layers - static_cast<int>(i), fetcher->get(i), unit_grad.data());
    fetcher->release(i);
    reducer->add(u, unit_grad.data());
  }
  float* dembed = cfg.model.tied ? embed_grads.data() : unit_grad.data();  // the tied one holds the head's share already
  if (!cfg.model.tied) mem.zero(dembed, layout.units()[layout.embed_unit()].numel * sizeof(float));
  model->embed_backward(dembed, tok);
  reducer->add(layout.embed_unit(), dembed);
}

void ShardedTrainer::Impl::write_unit_params(int u, const float* master) {
  const std::size_t n = states.optim.shard[u];
  if (!plan.rebuilt_after_update(layout.units()[u].numel)) {  // same partition as the master (or both replicated)
    ops.from_f32(dtype, master, params_store->writable(u), n);
    params_store->commit(u);
    return;
  }
  // Replicated params, or a unit held whole, from optim shards: all-gather the unit.
  const FlightPhaseScope tagged(FlightPhase::optimizer_step, u);
  ops.from_f32(dtype, master, gather_send.data(), n);
  Request r = g_hier->iall_gather(gather_send.data(), gather_recv.data(), n, dtype);
  meter->wait(WaitMeter::Wait::gather, r);
  mem.copy(params_store->writable(u), gather_recv.data(), layout.units()[u].numel * dsize);
  params_store->commit(u);
  keep_whole_for_backward(u, gather_recv.data());
}

ShardedTrainer::ShardedTrainer(const TrainConfig& cfg, const Plan& plan, const Mesh& mesh, const TokenData& data, StateReader* init,
                               const Backend& backend)
    : impl_(std::make_unique<Impl>(cfg, plan, mesh, data, init, backend)) {}

ShardedTrainer::ShardedTrainer(const TrainConfig& cfg, const Plan& plan, Communicator& world, const TokenData& data, StateReader* init,
                               const Backend& backend)
    : own_mesh_(std::make_unique<Mesh>(world)), impl_(std::make_unique<Impl>(cfg, plan, *own_mesh_, data, init, backend)) {}

ShardedTrainer::~ShardedTrainer() = default;

std::int64_t ShardedTrainer::steps_done() const { return impl_->step; }
MatmulType ShardedTrainer::matmul() const { return impl_->model->matmul(); }
const Plan& ShardedTrainer::plan() const { return impl_->plan; }
float ShardedTrainer::loss_scale() const { return impl_->loss_scale; }
std::array<std::uint64_t, kNumLevels> ShardedTrainer::last_step_bytes() const { return impl_->last_bytes; }

double ShardedTrainer::evaluate(const TokenData& val, int batches) {
  Impl& s = *impl_;
  const FlightPhaseScope tagged(FlightPhase::evaluation);
  flight_activity(FlightActivity::evaluation);
  const int w = s.mesh.data_size(), r = s.mesh.data_rank();
  // The data ranks share the batches. Every rank runs the same number of passes, so their gathers pair up; a
  // pass past the last batch repeats one and is not counted. The sums are over the whole world, their ratio the mean.
  float sum[2] = {0, 0};  // losses, batches
  for (int pass = 0; pass < (batches + w - 1) / w; ++pass) {
    const int b = pass * w + r;
    fill_eval_batch(val, s.cfg.effective_seq_len(), batches, b % batches, s.cfg.micro_batch, s.tokens.data(), s.targets.data());
    const double loss = s.forward(false);
    if (b < batches) sum[0] += static_cast<float>(loss), sum[1] += 1;
  }
  s.control_sum(sum, 2);
  return sum[0] / sum[1];
}

StepStats ShardedTrainer::step() {
  Impl& s = *impl_;
  if (faults().stalls(StallSite::step, s.me(), s.step + 1)) stall_forever();  // fault injection: a rank that stops taking part
  if (faults().stalls(StallSite::io, s.me(), s.step + 1)) stall_io_threads();
  const auto before = s.mesh.world().traffic().snapshot();
  const auto start = std::chrono::steady_clock::now();
  const CommSeconds busy_before = s.meter->snapshot();
  const double slot_before = s.slot_waits();
  s.meter->reset();
  s.breakdown = {};
  StepStats st;
  st.step = s.step + 1;
  const int accum = s.cfg.grad_accum;
  double loss = 0;
  for (int micro = 0; micro < accum; ++micro) loss += s.micro_batch(micro, s.loss_scale / static_cast<float>(accum));
  s.timed(s.breakdown.backward_s, [&] { s.reducer->finish(); });
  flight_step(s.step + 1, -1);
  const FlightPhaseScope tagged(FlightPhase::optimizer_step);
  flight_activity(FlightActivity::optimizer);
  // One all-reduce over the whole world for the mean loss and the squared
  // gradient norm; each gradient shard is counted once (by the first member
  // of its cross group; a replicated tensor's by tensor-parallel member 0).
  // Every rank holds its data rank's loss (each member of a tensor-parallel
  // group the same), so the world's mean is the data ranks' mean.
  double sq = 0;
  s.timed(s.breakdown.optimizer_s, [&] { sq = s.grad_sum_squares(); });
  float pair[3] = {static_cast<float>(loss / accum / s.mesh.world().size()), static_cast<float>(sq), 0.0f};
  s.control_sum(pair, faults().mismatches(s.me(), s.step + 1) ? 3 : 2);  // fault injection: one value more on one rank
  st.loss = pair[0];
  st.grad_norm = std::sqrt(static_cast<double>(pair[1])) / s.loss_scale;
  st.lr = s.cfg.schedule.at(s.step);
  st.tokens = static_cast<std::int64_t>(s.cfg.micro_batch) * accum * s.cfg.effective_seq_len() * s.mesh.data_size();
  st.skipped = !std::isfinite(st.grad_norm);
  s.timed(s.breakdown.optimizer_s, [&] {
    if (st.skipped) {
      if (s.dtype == DType::f16) s.loss_scale /= 2, s.good_steps = 0;
    } else {
      const float coef = clip_coefficient(st.grad_norm, s.cfg.grad_clip) / s.loss_scale;
      s.step_ops.scale(s.grads.data(), s.grads.size(), coef);
      s.optim->update(s.grads.data(), s.cfg.adamw, s.optim_steps + 1, st.lr,
                      [&s](int u, const float* master) { s.write_unit_params(u, master); });
      ++s.optim_steps;
      if (s.dtype == DType::f16 && ++s.good_steps == s.cfg.loss_scale_window) s.loss_scale *= 2, s.good_steps = 0;
    }
    s.mem.zero(s.grads.data(), s.grads.bytes());
    s.mem.fence();  // the step's work is done when step() returns
  });
  ++s.step;
  s.last_bytes = traffic_delta(before, s.mesh.world().traffic().snapshot());
  s.finish_breakdown(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                     s.meter->snapshot() - busy_before, s.slot_waits() - slot_before);
  return st;
}

void ShardedTrainer::Impl::finish_breakdown(double step_s, const CommSeconds& busy, double slot_wait_s) {
  StepBreakdown& b = breakdown;
  const WaitMeter::Totals& w = meter->totals();
  b.step_s = step_s;
  b.gather_wait_s = w.blocked[static_cast<int>(WaitMeter::Wait::gather)];
  b.reduce_wait_s = w.blocked[static_cast<int>(WaitMeter::Wait::reduce)];
  b.control_wait_s = w.blocked[static_cast<int>(WaitMeter::Wait::control)];
  b.tensor_wait_s = w.blocked[static_cast<int>(WaitMeter::Wait::tensor)];
  b.slot_wait_s = slot_wait_s;
  CommSeconds exposed;
  for (const CommSeconds& e : w.executor) exposed += e;
  b.exposed = exposed.s;
  b.busy = busy.s;
  b.gather_behind_reduce_s = w.executor[static_cast<int>(WaitMeter::Wait::gather)].kind_total(CommKind::reduce);
}

const StepBreakdown& ShardedTrainer::last_breakdown() const { return impl_->breakdown; }

std::vector<StepBreakdown> ShardedTrainer::gather_breakdowns() {
  static_assert(std::is_trivially_copyable_v<StepBreakdown>);
  std::vector<StepBreakdown> all(static_cast<std::size_t>(impl_->mesh.world().size()));
  impl_->control_gather(&impl_->breakdown, all.data(), sizeof(StepBreakdown));
  return all;
}

std::vector<std::pair<std::string, std::uint64_t>> ShardedTrainer::memory_bytes() const {
  const Impl& s = *impl_;
  const std::uint64_t scratch = (s.p_hier ? s.p_hier->scratch_bytes() : 0) + (s.b_hier ? s.b_hier->scratch_bytes() : 0) +
                                s.g_hier->scratch_bytes();  // grown to size in the first step
  const std::uint64_t buffers = s.fetcher->buffer_bytes() + s.reducer->buffer_bytes() + s.unit_grad.bytes() +
                                s.gather_send.bytes() + s.gather_recv.bytes() + scratch;
  const StateFootprint o = s.optim->footprint(), p = s.params_store->footprint(),
                       b = s.bwd_store ? s.bwd_store->footprint() : StateFootprint{};
  std::vector<std::pair<std::string, std::uint64_t>> out = {{"params", p.device},
                                                            {"bwd_params", b.device},
                                                            {"grads", s.grads.bytes()},
                                                            {"optim", o.device},
                                                            {"buffers", buffers},
                                                            {"embed", s.embed_params.bytes() + s.embed_grads.bytes()},
                                                            {"activations", s.model->activation_bytes()}};
  // Offloaded states: in host memory (cpu, an hpZ copy) or the NVMe buffers (host), and the swap files (file).
  for (const auto& [name, f] : {std::pair{"params", p}, std::pair{"bwd_params", b}, std::pair{"optim", o}}) {
    if (f.host) out.emplace_back(std::string(name) + "_host", f.host);
    if (f.file) out.emplace_back(std::string(name) + "_file", f.file);
  }
  return out;
}

std::vector<float> ShardedTrainer::gather_master() {
  Impl& s = *impl_;
  std::vector<float> master(s.states.optim.total), m(master.size()), v(master.size());
  s.optim->read(master.data(), m.data(), v.data());
  return s.gather_full(master);
}

std::vector<float> ShardedTrainer::Impl::gather_full(const std::vector<float>& shard) {
  std::vector<float> full(layout.num_params());
  MemArray<float> mine(mem, max_padded_unit(layout, states.optim)), gathered(mem, mine.size());
  for (std::size_t u = 0; u < layout.units().size(); ++u) {
    const std::size_t n = layout.units()[u].numel;
    mem.upload(mine.data(), shard.data() + states.optim.offset[u], states.optim.shard[u] * sizeof(float));
    if (plan.optim) g_hier->all_gather(mine.data(), gathered.data(), states.optim.shard[u], DType::f32);
    mem.download(full.data() + layout.units()[u].offset, plan.optim ? gathered.data() : mine.data(), n * sizeof(float));
  }
  return full;
}

}  // namespace tierzero
