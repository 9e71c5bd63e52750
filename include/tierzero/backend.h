// Where the sharding engine runs: the Memory its state and buffers live in
// and the GPT model that computes on that memory. cpu_backend() is host
// memory and GptModel<float> (the default); gpu::cuda_backend()
// (tierzero/gpu_backend.h, CUDA builds) is device memory and
// GptModel<float, gpu::DeviceOps>. The engine's code is the same for both.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "tierzero/gpt.h"
#include "tierzero/memory.h"

namespace tierzero {

// A GptModel's per-unit passes behind a virtual interface (the contracts
// of tierzero/gpt.h), so that the backend is chosen at run time. Every
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
};

// UnitModel over GptModel<float, Ops>.
template <class Ops>
class GptUnitModel final : public UnitModel {
 public:
  GptUnitModel(const GptLayout& layout, int batch, int seq_len, bool recompute) : m_(layout, batch, seq_len, recompute) {}
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

 private:
  GptModel<float, Ops> m_;
};

struct Backend {
  std::string name;  // "cpu", "cuda"
  Memory* memory = nullptr;
  // A model for `batch` sequences of `seq_len` tokens on this backend.
  std::function<std::unique_ptr<UnitModel>(const GptLayout& layout, int batch, int seq_len, bool recompute)> make_model;
};

// The Backend whose state lives in `memory` and whose model is GptModel<float, Ops>.
template <class Ops>
Backend backend_of(std::string name, Memory& memory) {
  return {std::move(name), &memory, [](const GptLayout& layout, int batch, int seq_len, bool recompute) {
            return std::unique_ptr<UnitModel>(std::make_unique<GptUnitModel<Ops>>(layout, batch, seq_len, recompute));
          }};
}

const Backend& cpu_backend();

}  // namespace tierzero
