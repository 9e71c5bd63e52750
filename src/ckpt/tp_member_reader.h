// A tensor-parallel member's view of a whole model's state
// (tierzero/gpt_config.h: TpShard, TpSlice): the member layout's arena,
// each element read from where its slice lies in the whole model. Any whole
// source works through it (a seed, weights files, a Hugging Face directory,
// a checkpoint saved at tp = 1), so a member reads only its own slices.
#pragma once
#include <memory>

#include "tierzero/state_reader.h"

namespace tierzero {

// `whole` and `member` must outlive the reader; `member` a GptLayout of the
// model `whole` holds, for one member of a tensor-parallel group.
std::unique_ptr<StateReader> tp_member_reader(StateReader& whole, const GptLayout& member);

}  // namespace tierzero
