// GptModel on a CUDA device (CUDA builds): the device ops backend and its
// instantiation, GptModel<float, gpu::DeviceOps>. Parameters, gradients,
// tokens and targets passed to it are device pointers; its activations
// are device arrays (gpu::device_allocate).
#pragma once
#include "model/gpt.h"
#include "gpu/gpu_ops.h"

namespace tierzero::gpu {

// GptModel's device backend (model/gpt.h): GptModel<float, gpu::DeviceOps>.
struct DeviceOps {
  template <class T>
  using Array = DeviceArray<T>;
  static void zero(DeviceArray<float>& a) { fill_zero(a.data(), a.size() * sizeof(float)); }
  static void zero(float* p, std::size_t n) { fill_zero(p, n * sizeof(float)); }
  static void upload(DeviceArray<float>& a, const float* host, std::size_t n) {
    a.resize(n);
    to_device(a.data(), host, n * sizeof(float));
  }
  static constexpr auto encoder_forward = &gpu::encoder_forward;
  static constexpr auto encoder_backward = &gpu::encoder_backward;
  static constexpr auto layernorm_forward = &gpu::layernorm_forward;
  static constexpr auto layernorm_backward = &gpu::layernorm_backward;
  static constexpr auto rmsnorm_forward = &gpu::rmsnorm_forward;
  static constexpr auto rmsnorm_backward = &gpu::rmsnorm_backward;
  static constexpr auto rope_forward = &gpu::rope_forward;
  static constexpr auto rope_backward = &gpu::rope_backward;
  static constexpr auto swiglu_forward = &gpu::swiglu_forward;
  static constexpr auto swiglu_backward = &gpu::swiglu_backward;
  static constexpr auto matmul_forward = &gpu::matmul_forward;
  static constexpr auto matmul_backward = &gpu::matmul_backward;
  static constexpr auto matmul_backward_input = &gpu::matmul_backward_input;
  static constexpr auto matmul_backward_weight = &gpu::matmul_backward_weight;
  static constexpr auto attention_forward = &gpu::attention_forward;
  static constexpr auto attention_backward = &gpu::attention_backward;
  static constexpr auto attention_scratch = &gpu::attention_scratch;
  static constexpr auto gelu_forward = &gpu::gelu_forward;
  static constexpr auto gelu_backward = &gpu::gelu_backward;
  static constexpr auto residual_forward = &gpu::residual_forward;
  static constexpr auto head_forward = &gpu::head_forward;
  static constexpr auto head_backward = &gpu::head_backward;
  static constexpr auto vocab_max = &gpu::vocab_max;
  static constexpr auto vocab_exp_sums = &gpu::vocab_exp_sums;
  static constexpr auto vocab_softmax_loss = &gpu::vocab_softmax_loss;
  static void set_matmul(MatmulType t) { GpuContext::current().math = t; }
  static Bf16Units bf16_units() { return device_has_bf16() ? Bf16Units::faster : Bf16Units::none; }
};

}  // namespace tierzero::gpu

namespace tierzero {
extern template class GptModel<float, gpu::DeviceOps>;
}  // namespace tierzero
