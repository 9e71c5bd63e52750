// Training steps. A Trainer runs one optimisation step at a time (all
// micro-batches, clipping, AdamW) and reports what happened; the loop around
// it (logging, metrics, progress) lives in the CLI. LocalTrainer is the
// single-rank implementation: the whole model on one process, parameters
// stored in the configured dtype with an fp32 master copy.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tierzero/data.h"
#include "tierzero/train_config.h"

namespace tierzero {

struct StepStats {
  std::int64_t step = 0;     // the steps completed with this one: 1 after the first (docs/formats.md, "Step numbers")
  double loss = 0;           // mean over the step's micro-batches (and ranks)
  double grad_norm = 0;      // global L2 norm before clipping
  float lr = 0;
  bool skipped = false;      // non-finite gradients: parameters left unchanged
  std::int64_t tokens = 0;   // tokens processed by the step, all ranks
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  // Takes the next step; its stats carry the steps completed with it (steps_done() after the call).
  virtual StepStats step() = 0;
  // The steps completed: 0 at the start, a checkpoint's step after resuming from it.
  virtual std::int64_t steps_done() const = 0;
  // What the model's GEMMs compute in: cfg.matmul resolved for the device (fp32 or bf16).
  virtual MatmulType matmul() const = 0;
  // Mean loss over `batches` held-out batches of micro_batch sequences
  // (fill_eval_batch), forward only; the parameters are left as they are.
  // Collective on a multi-rank trainer (the batches are shared out).
  virtual double evaluate(const TokenData& val, int batches) = 0;
};

class LocalTrainer final : public Trainer {
 public:
  // Initialises the parameters from cfg.seed (gpt_init). `data` must outlive it.
  LocalTrainer(const TrainConfig& cfg, const TokenData& data);
  ~LocalTrainer() override;
  StepStats step() override;
  std::int64_t steps_done() const override;
  MatmulType matmul() const override;
  double evaluate(const TokenData& val, int batches) override;
  // The fp32 master parameters (the flat arena of the model's GptLayout).
  const std::vector<float>& master() const;
  std::size_t num_params() const;

  struct Impl;  // src/run/trainer.cc

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tierzero
