// GPT model shapes, presets and the parameter layout (docs/models.md).
// All parameters live in one flat arena; the arena is cut into
// *units* that the sharding engine fetches and releases one at a time:
//   unit 0        embed  wte [V, C], wpe [T, C]
//   unit 1 .. L   block  ln1_w [C], ln1_b [C], attn_w [3C, C], attn_b [3C],
//                        proj_w [C, C], proj_b [C], ln2_w [C], ln2_b [C],
//                        fc_w [4C, C], fc_b [4C], fcproj_w [C, 4C], fcproj_b [C]
//   unit L + 1    head   lnf_w [C], lnf_b [C]  (the LM head is tied to wte)
// Linear weights are [out, in] (y = x W^T + b), as in PyTorch. Value types.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tierzero {

struct GptConfig {
  std::string name = "custom";
  int vocab = 256;    // V
  int context = 64;   // T (maximum sequence length)
  int layers = 2;     // L
  int channels = 64;  // C
  int heads = 4;      // H; C % H == 0

  // Throws ConfigError naming the bad field.
  void validate() const;
  std::size_t num_params() const;
  // Model FLOPs per trained token (forward + backward), PaLM's formula
  // (Chowdhery et al. 2022, "PaLM", appendix B): 6 N + 12 L C T, where N
  // counts every parameter that takes part in a matrix multiply: all but
  // wpe (a lookup); wte is counted once, as the tied LM head.
  double flops_per_token(int seq_len) const;
};

// Presets: gpt-tiny (tests), gpt-mini (~10M, benchmarks here), gpt2-124m,
// gpt-1.3b, gpt-10b, gpt-20b (docs/models.md lists shapes and sizes).
std::vector<std::string> gpt_preset_names();
// Throws ConfigError for an unknown name.
GptConfig gpt_preset(std::string_view name);

struct TensorInfo {
  std::string name;          // "wte", "h.0.attn_w", ..., "lnf_w"
  std::vector<int> shape;
  std::size_t offset = 0;    // elements from the start of the arena
  std::size_t unit_offset = 0;  // elements from the start of its unit
  std::size_t numel = 0;
  int unit = 0;
  bool decay = false;        // weight decay applies (matrices and embeddings only)
};

struct UnitInfo {
  std::string name;          // "embed", "block.0", ..., "head"
  std::size_t offset = 0;    // elements from the start of the arena
  std::size_t numel = 0;
};

// Offsets of a block unit's tensors inside the unit, in elements.
struct BlockOffsets {
  std::size_t ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
};

class GptLayout {
 public:
  explicit GptLayout(const GptConfig& c);
  const GptConfig& config() const { return config_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::vector<UnitInfo>& units() const { return units_; }
  std::size_t num_params() const { return total_; }
  const TensorInfo& tensor(std::string_view name) const;  // throws ConfigError
  const BlockOffsets& block() const { return block_; }
  int embed_unit() const { return 0; }
  int block_unit(int layer) const { return 1 + layer; }
  int head_unit() const { return config_.layers + 1; }
  // The order the engine visits units in, which the traffic model follows:
  // forward embed, blocks, head; backward head, then the blocks in reverse
  // (the embedding's gradient comes from its forward parameters); gradients
  // are reduced in backward order, then the embedding's.
  std::vector<int> forward_order() const;
  std::vector<int> backward_order() const;
  std::vector<int> reduce_order() const;

 private:
  GptConfig config_;
  std::vector<TensorInfo> tensors_;
  std::vector<UnitInfo> units_;
  BlockOffsets block_{};
  std::size_t total_ = 0;
};

// GPT-2 initialisation, deterministic in `seed`: weights N(0, 0.02), the two
// residual projections N(0, 0.02 / sqrt(2 L)), biases 0, LayerNorm weight 1.
void gpt_init(const GptLayout& layout, std::uint64_t seed, float* params);

}  // namespace tierzero
