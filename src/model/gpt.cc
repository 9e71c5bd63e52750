#include "model/gpt.h"

#include "model/gpt_impl.h"
#include "model/host_ops.h"

namespace tierzero {

template class GptModel<float>;
template class GptModel<double>;

}  // namespace tierzero
