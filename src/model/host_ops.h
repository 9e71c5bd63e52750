// The CPU ops backend of GptModel (model/gpt.h): std::vector arrays and
// the layers of model/ops.h.
#pragma once
#include <algorithm>
#include <vector>

#include "model/ops.h"

namespace tierzero {

struct HostOps {
  template <class T>
  using Array = std::vector<T>;
  template <class T>
  static void zero(std::vector<T>& v) {
    std::fill(v.begin(), v.end(), T(0));
  }
  template <class T>
  static void zero(T* p, std::size_t n) {
    std::fill_n(p, n, T(0));
  }
  template <class T>
  static void upload(std::vector<T>& v, const T* host, std::size_t n) {
    v.assign(host, host + n);
  }
  template <class... A>
  static void encoder_forward(A... a) { ops::encoder_forward(a...); }
  template <class... A>
  static void encoder_backward(A... a) { ops::encoder_backward(a...); }
  template <class... A>
  static void layernorm_forward(A... a) { ops::layernorm_forward(a...); }
  template <class... A>
  static void layernorm_backward(A... a) { ops::layernorm_backward(a...); }
  template <class... A>
  static void rmsnorm_forward(A... a) { ops::rmsnorm_forward(a...); }
  template <class... A>
  static void rmsnorm_backward(A... a) { ops::rmsnorm_backward(a...); }
  template <class... A>
  static void rope_forward(A... a) { ops::rope_forward(a...); }
  template <class... A>
  static void rope_backward(A... a) { ops::rope_backward(a...); }
  template <class... A>
  static void swiglu_forward(A... a) { ops::swiglu_forward(a...); }
  template <class... A>
  static void swiglu_backward(A... a) { ops::swiglu_backward(a...); }
  template <class... A>
  static void matmul_forward(A... a) { ops::matmul_forward(a...); }
  template <class... A>
  static void matmul_backward(A... a) { ops::matmul_backward(a...); }
  template <class... A>
  static void matmul_backward_input(A... a) { ops::matmul_backward_input(a...); }
  template <class... A>
  static void matmul_backward_weight(A... a) { ops::matmul_backward_weight(a...); }
  template <class... A>
  static void attention_forward(A... a) { ops::attention_forward(a...); }
  template <class... A>
  static void attention_backward(A... a) { ops::attention_backward(a...); }
  static constexpr auto attention_scratch = &ops::attention_scratch;
  static void set_matmul(MatmulType t) { ops::set_matmul(t); }
  static Bf16Units bf16_units() { return ops::cpu_bf16_units(); }
  template <class... A>
  static void gelu_forward(A... a) { ops::gelu_forward(a...); }
  template <class... A>
  static void gelu_backward(A... a) { ops::gelu_backward(a...); }
  template <class... A>
  static void residual_forward(A... a) { ops::residual_forward(a...); }
  template <class... A>
  static double head_forward(A... a) { return ops::head_forward(a...); }
  template <class... A>
  static void head_backward(A... a) { ops::head_backward(a...); }
  template <class... A>
  static void vocab_max(A... a) { ops::vocab_max(a...); }
  template <class... A>
  static void vocab_exp_sums(A... a) { ops::vocab_exp_sums(a...); }
  template <class... A>
  static double vocab_softmax_loss(A... a) { return ops::vocab_softmax_loss(a...); }
};

}  // namespace tierzero
