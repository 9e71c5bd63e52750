// The code that computes a model's layers, as the simulator prices its
// memory-bound operations (docs/simulator.md, "Model code"). An engine
// (tierzero/engine.h) says how the ranks share and move the model; the
// model's code says how a layer's element-wise work is written. Code written
// as PyTorch expressions (Hugging Face Transformers' modeling files,
// torchtitan's and IBM's fms Llama) launches one kernel per expression, in
// fp32 where it upcasts: its RMSNorm moves about 9x the bytes of a fused
// norm. Each operation a code file lists gives the bytes per element that its
// kernels read and write, forward and backward, for 16-bit activations, and
// how many kernels it launches, with its source (the code path); an operation
// it does not list runs as the engine's kernels (the op list's minimum x the
// engine's elementwise_traffic). data/model-code/NAME.toml. Value type.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tierzero {

// One operation as a code writes it: bytes per element and kernels, forward and backward.
struct CodedOp {
  bool listed = false;  // false: the engine's kernels
  double forward_bytes = 0, backward_bytes = 0;
  double forward_kernels = 1, backward_kernels = 1;
  bool operator==(const CodedOp&) const = default;
};

struct ModelCode {
  std::string name;  // "": the engine's kernels for every operation
  CodedOp norm;      // per element of the normalised hidden state
  double norm_saved_bytes = 0;  // per element, what a listed norm keeps for its backward (the engine's: its input and output)
  CodedOp rope;      // per element of the rotated queries and keys
  std::vector<std::pair<std::string, std::string>> sources;  // per key, where its value comes from
  bool operator==(const ModelCode&) const = default;

  std::string source_of(const std::string& key) const;
};

// hf-transformers, torchtitan, fms.
std::vector<std::string> model_code_names();
// The code of `name` ("" or "engine": every operation the engine's); throws ConfigError naming the codes.
ModelCode model_code(std::string_view name);

}  // namespace tierzero
