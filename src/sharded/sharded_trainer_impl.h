// The sharding engine's state, shared by sharded_trainer.cc (the step) and
// sharded_trainer_checkpoint.cc (save and load). Internal.
#pragma once
#include <array>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ckpt/checkpoint_writer.h"
#include "tierzero/checkpoint.h"
#include "ckpt/page_buffer.h"
#include "backend/backend_impl.h"
#include "tierzero/sharded_trainer.h"
#include "sharded/grad_reducer.h"
#include "sharded/optim_store.h"
#include "sharded/param_store.h"
#include "plan/shard_layout.h"
#include "sharded/unit_fetcher.h"

namespace tierzero {

// fp16's first loss scale, 2^cfg.loss_scale_power (tierzero/train_config.h).
inline float initial_loss_scale(const TrainConfig& cfg) { return std::ldexp(1.0f, cfg.loss_scale_power); }

struct ShardedTrainer::Impl {
  TrainConfig cfg;
  Plan plan;
  // The ranks: the data-parallel side (mesh.data(): the batch's share, the states' partitions, their collectives)
  // and the job-wide one (mesh.world(): control values, breakdowns, fault injection, file names by world rank).
  const Mesh& mesh;
  Memory& mem;      // the backend's: every MemArray below lives here
  ElementOps& ops;  // the backend's element work on it
  StepOps& step_ops;  // and its optimizer work
  GptLayout layout;
  BatchSampler sampler;
  std::unique_ptr<UnitModel> model;
  DType dtype;
  std::size_t dsize;
  StateLayouts states;  // this rank's shards of params, bwd_params, grads and optim
  bool counts_norm;  // this rank adds its gradient shard to the global norm (one rank per cross group)
  // At tp > 1, the runs of the gradient shard this rank counts in the norm (plan/shard_layout.h's norm_segments).
  std::vector<ShardSegment> norm_segments;
  Communicator& control;  // mesh.world().host(): the loss, the norm and checkpoint status travel on it
  std::unique_ptr<Communicator> p_comm, b_comm, g_comm, cross_comm;
  std::unique_ptr<Hierarchy> p_hier, b_hier, g_hier;
  // The working parameters' shards (plan.param_offload): params, and the
  // bwd_params copy when it is distinct (hpZ; in host memory when params
  // are offloaded, else the backend's).
  std::unique_ptr<ParamStore> params_store, bwd_store;
  MemArray<std::byte> gather_send, gather_recv;
  MemArray<float> grads;
  std::vector<ShardSegment> segments;
  std::unique_ptr<OptimStore> optim;  // the fp32 master and AdamW's moments (plan.optim_offload)
  std::vector<int> forward_units, backward_units, reduce_order;
  // Issue this rank's collectives, each queue in program order
  // (comm/comm_schedule.h): parameter gathers on `schedule`; gradient
  // reductions and control values on `reduce_schedule`, its own queue and
  // thread when cfg.comm_queues is 2 and the backend runs collectives
  // concurrently (then a gather never waits behind a reduction), else the
  // same one. Declared after the buffers and hierarchies their jobs name and
  // before the fetcher and reducer, whose pending requests wait on them.
  std::unique_ptr<CommSchedule> schedule, own_reduce_schedule;
  CommSchedule* reduce_schedule = nullptr;
  // The training thread's waits on them, split by what the executors did (the step's breakdown).
  std::unique_ptr<WaitMeter> meter;
  StepBreakdown breakdown;
  std::unique_ptr<UnitFetcher> fetcher;
  std::unique_ptr<GradReducer> reducer;
  // The embedding and its gradient, held whole for the step when the head is tied (empty when untied).
  MemArray<float> embed_params, embed_grads, unit_grad;
  const float* tied_embed() const { return cfg.model.tied ? embed_params.data() : nullptr; }
  std::vector<int> tokens, targets;  // sampled on the host, then uploaded
  MemArray<int> tokens_mem, targets_mem;
  std::int64_t step = 0;  // the steps completed; the one in progress is step + 1 (docs/formats.md, "Step numbers")
  std::int64_t optim_steps = 0;  // applied updates: AdamW's t (skipped steps do not count)
  float loss_scale = 1.0f;
  int good_steps = 0;
  std::array<std::uint64_t, kNumLevels> last_bytes{};
  std::string sampler_origin;  // the data the sampler reads, recorded in checkpoints
  CheckpointWriter writer;              // rank 0's side of every save: the directory protocol
  std::vector<std::string> warnings;    // for the caller (take_warnings)
  // A checkpoint being written (sharded_trainer_checkpoint.cc): what its meta.json
  // records, taken when the save began; the shard snapshot its writer
  // (inline, or a background thread for begin_save) turns into files; the
  // writer's result. Completed by finish_save on every rank.
  struct PendingSave {
    std::string dir, name;
    int keep = 0;
    std::int64_t step = 0, optim_steps = 0;
    float loss_scale = 1;
    int good_steps = 0;
    PageBuffer<std::byte> params;  // page-aligned: written without a copy (O_DIRECT)
    PageBuffer<float> optim;
    std::uint64_t record[4] = {0, 0, 0, 0};  // params bytes, crc, optim bytes, crc
    std::string error;                       // the writer's failure, if any
    std::atomic<bool> written{false};
    std::thread writer;
    ~PendingSave() {
      if (writer.joinable()) writer.join();
    }
  };
  std::unique_ptr<PendingSave> pending_save;
  // The snapshot buffers, kept between saves (fresh pages fault slowly; the
  // steady state allocates nothing): lent to a PendingSave while it lives.
  PageBuffer<std::byte> snapshot_params;
  PageBuffer<float> snapshot_optim;
  std::unique_ptr<PendingSave> begin_pending_save(const std::string& dir, int keep);  // collective
  std::string finish_save(PendingSave& p);                                             // collective

  // init: the state to start from (gpt_init of the seed when null).
  Impl(const TrainConfig& c, const Plan& pl, const Mesh& m, const TokenData& data, StateReader* init, const Backend& be);
  // Loading (sharded_trainer_load.cc), unit by unit, so that a rank holds
  // its shards and one unit's slices. From a full state of `layout` (a
  // tensor-parallel member's when split): this rank's slices of master, m
  // and v, and the working parameters from the master.
  void fill_shards(StateReader& from);
  // The same from the whole model's state (through the member's view at tp > 1).
  void fill_from_whole(StateReader& whole);
  // From a checkpoint of this run's layout: this rank's own two files.
  void read_own_shards(CheckpointReader& ckpt);
  // Unit u's working parameters from its shard in host bytes (the units
  // held whole copied into the backward store too).
  void write_param_unit(int u, const std::byte* shard);
  // Collective: the problem of the lowest rank that had one ("" when none),
  // so that every rank reports the same error.
  std::string first_problem(const std::string& mine);
  // The full array of an optim-partitioned state from this rank's host shard (collective).
  std::vector<float> gather_full(const std::vector<float>& shard);
  // A copy of an array on the host.
  template <class T>
  std::vector<T> to_host(const MemArray<T>& a) {
    std::vector<T> h(a.size());
    mem.download(h.data(), a.data(), a.bytes());
    return h;
  }
  // Sums `n` host floats over the whole world, on the control communicator (through the schedule).
  void control_sum(float* values, std::size_t n);
  // All-gathers `bytes` host bytes of every rank into `out` (world.size() * bytes), likewise.
  void control_gather(const void* in, void* out, std::size_t bytes);
  std::unique_ptr<Communicator> group_comm(const Partition& level);
  // The constructor's steps, in order.
  void build_communicators(bool concurrent_queues);
  // Seconds the training thread waited for a free slot in either queue.
  double slot_waits() const;
  void allocate_states();
  void initialise_weights(StateReader* init);
  UnitSource source(const ShardLayout& s, ParamStore& store, Hierarchy* h, int bits, FlightPhase phase) const;
  int me() const;  // this rank's world rank
  // This rank's share of the squared gradient norm (the step's sum over the world completes it).
  double grad_sum_squares();
  // Uploads `tokens` and `targets` and runs the forward pass over every
  // unit (keeping the bwd_params slices when `keep`); returns the loss.
  double forward(bool keep);
  double micro_batch(int micro, float dloss);
  void backward(float dloss);  // of the micro-batch forward() just ran
  // Fills `breakdown` at the end of a step from the meter and the executor's busy time over it.
  void finish_breakdown(double step_s, const CommSeconds& busy, double slot_wait_s);
  // Runs f and adds its time, less the waits it made (meter, full slots), to `into`.
  template <class F>
  void timed(double& into, F&& f);
  // The working parameters of unit u from its new fp32 master shard (the
  // backend's memory): converted in place, or all-gathered when params are
  // replicated and optim partitioned (collective).
  void write_unit_params(int u, const float* master);
  // A unit held whole (Plan::persist_threshold), `whole` in the backend's
  // memory (`upload`: on the host), copied into the backward store, when
  // there is one (hpZ).
  void keep_whole_for_backward(int u, const std::byte* whole, bool upload = false);
};


}  // namespace tierzero
