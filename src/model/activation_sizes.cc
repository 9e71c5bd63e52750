#include "model/activation_sizes.h"

namespace tierzero {

std::size_t ActivationSizes::total() const {
  std::size_t n = 0;
  for (int i = 0; i < kNumActBuffers; ++i) n += elements[i] * copies[i];
  return n;
}

ActivationSizes activation_sizes(const GptConfig& c, int batch, int seq_len, bool recompute, std::size_t attention_scratch, int tp,
                                 bool sp) {
  const std::size_t N = static_cast<std::size_t>(batch) * seq_len, C = c.channels, F = c.ffn_size() / tp, H = c.heads / tp;
  const std::size_t R = sp ? N / static_cast<std::size_t>(tp) : N;
  const std::size_t A = H * c.head_size(), W = A + 2 * static_cast<std::size_t>(tp_local_kv(c, tp)) * c.head_size();
  const std::size_t G = c.mlp == Mlp::swiglu ? 2 * F : F;
  const std::size_t mean = c.norm == Norm::layernorm ? R : 0;
  const std::size_t rope = c.positions == Positions::rope ? static_cast<std::size_t>(seq_len) * (c.head_size() / 2) : 0;
  const std::size_t blocks = recompute ? 1 : static_cast<std::size_t>(c.layers);
  ActivationSizes s;
  const auto set = [&](ActBuffer b, std::size_t elements, std::size_t copies = 1) {
    s.elements[static_cast<int>(b)] = elements, s.copies[static_cast<int>(b)] = copies;
  };
  set(ActBuffer::residual, R * C, static_cast<std::size_t>(c.layers) + 1);
  set(ActBuffer::ln1, R * C, blocks), set(ActBuffer::ln1_mean, mean, blocks), set(ActBuffer::ln1_rstd, R, blocks);
  set(ActBuffer::qkv, N * W, blocks);
  set(ActBuffer::att, static_cast<std::size_t>(batch) * H * seq_len * seq_len, blocks);
  set(ActBuffer::atty, N * A, blocks);
  set(ActBuffer::res2, R * C, blocks);
  set(ActBuffer::ln2, R * C, blocks), set(ActBuffer::ln2_mean, mean, blocks), set(ActBuffer::ln2_rstd, R, blocks);
  set(ActBuffer::fch, N * G, blocks), set(ActBuffer::fch_act, N * F, blocks);
  set(ActBuffer::lnf, N * C), set(ActBuffer::lnf_mean, mean), set(ActBuffer::lnf_rstd, R);
  const std::size_t T = static_cast<std::size_t>(tp);
  set(ActBuffer::probs, N * ((static_cast<std::size_t>(c.vocab) + T - 1) / T));
  set(ActBuffer::rope_cos, rope), set(ActBuffer::rope_sin, rope);
  set(ActBuffer::dres, R * C), set(ActBuffer::dln, N * C), set(ActBuffer::datty, N * A), set(ActBuffer::dqkv, N * W);
  set(ActBuffer::dfch, N * G), set(ActBuffer::dfch_act, N * F), set(ActBuffer::att_scratch, attention_scratch);
  if (sp) set(ActBuffer::full, N * C), set(ActBuffer::slice, R * C), set(ActBuffer::dnorm, 4 * C);
  set(ActBuffer::dkv, tp_kv_grad_elements(c, tp));
  if (tp > 1) set(ActBuffer::vocab, (T + 3) * N);
  return s;
}

}  // namespace tierzero
