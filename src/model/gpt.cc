#include "model/gpt.h"

#include "model/activation_sizes.h"
#include "model/gpt_impl.h"
#include "model/host_ops.h"

namespace tierzero {

template class GptModel<float>;
template class GptModel<double>;

std::size_t gpt_activation_elements(const GptConfig& c, int batch, int seq_len, bool recompute, std::size_t attention_scratch, int tp,
                                    bool sp) {
  return activation_sizes(c, batch, seq_len, recompute, attention_scratch, tp, sp).total();
}

}  // namespace tierzero
