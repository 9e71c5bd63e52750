// The Backend (tierzero/backend.h) defined: the Memory its state and buffers live in,
// the element-wise and optimizer work on that memory, and the GPT model
// that computes there. cpu_backend() is host memory, the CPU's element and
// step work and GptModel<float> (the default); gpu::cuda_backend()
// (tierzero/gpu_backend.h, CUDA builds) is device memory, kernels and
// GptModel<float, gpu::DeviceOps>. The engine's code is the same for both.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "quant/element_ops.h"
#include "model/gpt.h"
#include "core/memory.h"
#include "tierzero/backend.h"
#include "tierzero/optim.h"
#include "tierzero/train_config.h"

namespace tierzero {

// A GptModel's per-unit passes behind a virtual interface (the contracts
// of model/gpt.h), so that the backend is chosen at run time. Every
// pointer lives in the backend's memory; work is enqueued on the calling
// thread like the Memory's (head_forward returns the finished loss).
class UnitModel {
 public:
  virtual ~UnitModel() = default;
  virtual void embed_forward(const float* embed, const int* tokens) = 0;
  virtual void block_forward(int layer, const float* block) = 0;
  virtual double head_forward(const float* embed, const float* head, const int* targets) = 0;
  virtual void head_backward(const float* embed, const float* head, float* dembed, float* dhead, const int* targets,
                             float dloss) = 0;
  virtual void block_backward(int layer, const float* block, float* dblock) = 0;
  virtual void embed_backward(float* dembed, const int* tokens) = 0;
  virtual std::size_t activation_bytes() const = 0;
  // The GEMM math it computes with (resolved: fp32 or bf16).
  virtual MatmulType matmul() const = 0;
};

// UnitModel over GptModel<float, Ops>, for cfg's micro-batch, sequence
// length and recomputation; it sets the calling thread's GEMM math from
// cfg.matmul (Ops::set_matmul), which the model's passes then use;
// `tp_group` as GptModel takes it.
template <class Ops>
class GptUnitModel final : public UnitModel {
 public:
  GptUnitModel(const GptLayout& layout, const TrainConfig& cfg, TpGroup<float> tp_group)
      : m_(layout, cfg.micro_batch, cfg.effective_seq_len(), cfg.recompute, std::move(tp_group)),
        matmul_(resolve_matmul(cfg.matmul, cfg.param_dtype, Ops::bf16_units())) {
    Ops::set_matmul(matmul_);
  }
  void embed_forward(const float* embed, const int* tokens) override { m_.embed_forward(embed, tokens); }
  void block_forward(int layer, const float* block) override { m_.block_forward(layer, block); }
  double head_forward(const float* embed, const float* head, const int* targets) override {
    return m_.head_forward(embed, head, targets);
  }
  void head_backward(const float* embed, const float* head, float* dembed, float* dhead, const int* targets,
                     float dloss) override {
    m_.head_backward(embed, head, dembed, dhead, targets, dloss);
  }
  void block_backward(int layer, const float* block, float* dblock) override { m_.block_backward(layer, block, dblock); }
  void embed_backward(float* dembed, const int* tokens) override { m_.embed_backward(dembed, tokens); }
  std::size_t activation_bytes() const override { return m_.activation_bytes(); }
  MatmulType matmul() const override { return matmul_; }

 private:
  GptModel<float, Ops> m_;
  MatmulType matmul_;
};

// The optimizer step's work on the engine's fp32 shards, ordered like the
// backend's Memory (the CPU's runs at once).
class StepOps {
 public:
  virtual ~StepOps() = default;
  virtual void scale(float* buf, std::size_t n, float factor) = 0;
  // Sum of squares, accumulated in double (in element order on the host,
  // in another order on a device); returns the finished value.
  virtual double sum_squares(const float* buf, std::size_t n) = 0;
  // optim.h's adamw_update, with the CPU's bits.
  virtual void adamw(float* p, const float* g, float* m, float* v, std::size_t n, const AdamWConfig& c, std::int64_t t,
                     float lr, bool decay) = 0;
};

struct Backend {
  std::string name;  // "cpu", "cuda"
  Memory* memory = nullptr;
  ElementOps* ops = nullptr;
  StepOps* step = nullptr;
  // A model for cfg's micro-batches on this backend (GptUnitModel); `tp_group`: its tensor-parallel group's collectives.
  std::function<std::unique_ptr<UnitModel>(const GptLayout& layout, const TrainConfig& cfg, TpGroup<float> tp_group)> make_model;
  // Whether collectives on different communicators may run at once, from two
  // threads (the engine's gather and reduction queues). MPI: yes. NCCL: no —
  // kernels of two communicators launched in different orders on different
  // ranks can wait on each other for the GPU, so one queue keeps one order.
  bool concurrent_queues = true;
};

// The Backend on `memory`, `ops` and `step` whose model is GptModel<float, Ops>.
template <class Ops>
Backend backend_of(std::string name, Memory& memory, ElementOps& ops, StepOps& step) {
  return {std::move(name), &memory, &ops, &step, [](const GptLayout& layout, const TrainConfig& cfg, TpGroup<float> tp_group) {
            return std::unique_ptr<UnitModel>(std::make_unique<GptUnitModel<Ops>>(layout, cfg, std::move(tp_group)));
          }};
}


}  // namespace tierzero
