#include "model/gpt.h"

#include "model/gpt_impl.h"
#include "model/host_ops.h"

namespace tierzero {

template class GptModel<float>;
template class GptModel<double>;

std::size_t gpt_activation_elements(const GptConfig& c, int batch, int seq_len, bool recompute, std::size_t attention_scratch, int tp,
                                    bool sp) {
  // GptModel::Buffers (model/gpt_impl.h), array by array; A, W, G and F the member's, R its rows of the stream.
  const std::size_t N = static_cast<std::size_t>(batch) * seq_len, C = c.channels, F = c.ffn_size() / tp, H = c.heads / tp;
  const std::size_t R = sp ? N / tp : N;
  const std::size_t A = H * c.head_size(), W = A + 2 * static_cast<std::size_t>(c.kv() / tp) * c.head_size();
  const std::size_t G = c.mlp == Mlp::swiglu ? 2 * F : F;
  const std::size_t mean = c.norm == Norm::layernorm ? R : 0;
  const std::size_t att = static_cast<std::size_t>(batch) * H * seq_len * seq_len;
  const std::size_t block = 2 * (R * C + mean + R) + N * W + att + N * A + R * C + N * G + N * F;
  const std::size_t blocks = recompute ? 1 : static_cast<std::size_t>(c.layers);
  const std::size_t rope = c.positions == Positions::rope ? 2 * static_cast<std::size_t>(seq_len) * (c.head_size() / 2) : 0;
  const std::size_t head = N * C + mean + R + N * static_cast<std::size_t>(c.vocab);
  const std::size_t scratch = R * C + N * C + N * A + N * W + N * G + N * F + attention_scratch;
  const std::size_t sp_scratch = sp ? N * C + R * C + 4 * C : 0;
  return (c.layers + 1) * R * C + blocks * block + head + rope + scratch + sp_scratch;
}

}  // namespace tierzero
