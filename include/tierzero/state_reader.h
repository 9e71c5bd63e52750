// A model's full fp32 training state, read by ranges wherever it is
// stored: the master weights in GptLayout order and AdamW's two moments.
// A sharded run reads from one only the slices its own shards hold, unit
// by unit (tierzero/sharded_trainer.h), so no rank holds the whole model.
// The sources: weights files (open_weights below), a seed's
// initialisation (seeded_weights) and checkpoints (CheckpointReader,
// tierzero/checkpoint.h, of any rank count, topology and plan). A reader
// holds its files open and nothing of their values but what one read
// needs. One thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tierzero/gpt_config.h"

namespace tierzero {

enum class StatePart { master, m, v };

class StateReader {
 public:
  virtual ~StateReader() = default;
  // Elements [first, first + count) of `part` into out[0, count) (a
  // weights source's moments are zeros). Throws FormatError naming the
  // file (and tensor) for a value that is not finite or a damaged file.
  virtual void read(StatePart part, std::size_t first, std::size_t count, float* out) = 0;
  // Bytes of stored values read so far (checksums aside): what the ranges asked for cost.
  virtual std::uint64_t bytes_read() const = 0;
  // Whether m and v hold anything but zeros (a weights source's do not, a checkpoint's do).
  virtual bool has_moments() const = 0;
};

// The weights of `model` in `path`: a safetensors file of tierzero's tensor
// names (`ckpt export --safetensors`) or of Hugging Face's GPT-2 or
// Llama-family names (tierzero/hugging_face.h), in F32, BF16 or F16; or a
// Hugging Face directory (model.safetensors, or model.safetensors.index.json
// and the shards its weight_map names). Opens the files and reads their
// headers only: FormatError naming the file and tensor when one is
// missing or misshapen, when the names are another family's than the
// model's, or the index is malformed.
std::unique_ptr<StateReader> open_weights(const std::string& path, const GptConfig& model);
// gpt_init's weights for `seed`, computed for the ranges asked (the same bits).
std::unique_ptr<StateReader> seeded_weights(const GptConfig& model, std::uint64_t seed);
// All `n` elements of `part` (n: the model's parameters): export, sampling, tests.
std::vector<float> read_whole(StateReader& from, StatePart part, std::size_t n);

}  // namespace tierzero
