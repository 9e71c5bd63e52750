// Decoder-only transformer shapes (GPT-2 and the Llama family), presets,
// model files and the parameter layout (docs/models.md). All parameters
// live in one flat arena; the arena is cut into *units* that the sharding
// engine fetches and releases one at a time:
//   unit 0        embed  wte [V, C], wpe [T, C] (learned positions only)
//   unit 1 .. L   block  ln1_w [C], ln1_b [C] (LayerNorm only),
//                        attn_w [(H + 2 KV) D, C], attn_b (bias all or qkv),
//                        proj_w [C, C], proj_b (bias all), ln2_w, ln2_b,
//                        fc_w [F, C] (GELU) or [2F, C] (SwiGLU: gate rows,
//                        then up rows), fc_b (bias all), fcproj_w [C, F], fcproj_b
//   unit L + 1    head   lnf_w [C], lnf_b [C] (LayerNorm only), lm_head [V, C]
//                        (untied only; tied heads use wte)
// D = C / H is the head size, KV the key/value heads (grouped-query
// attention when KV < H), F the MLP's hidden size. attn_w's rows are the
// H query heads, then KV key heads, then KV value heads, each D rows in
// Hugging Face's rotate-half order for RoPE. Linear weights are [out, in]
// (y = x W^T + b), as in PyTorch. Value types.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tierzero {

enum class Norm { layernorm, rmsnorm };
enum class Positions { learned, rope };
enum class Mlp { gelu, swiglu };
// Which linears carry a bias: all (GPT-2), none (Llama, Mistral) or the
// query/key/value projection only (Qwen2).
enum class Bias { all, none, qkv };
std::string_view norm_name(Norm n);
std::string_view positions_name(Positions p);
std::string_view mlp_name(Mlp m);
std::string_view bias_name(Bias b);

// Llama 3.1's RoPE frequency scaling (rope_type "llama3"; Hugging Face
// transformers' _compute_llama3_parameters): wavelengths longer than
// original_context / low_freq_factor are divided by `factor`, those shorter
// than original_context / high_freq_factor kept, and the band between
// interpolated. factor 0: none.
struct RopeScaling {
  double factor = 0;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  int original_context = 8192;
  bool operator==(const RopeScaling& o) const {
    return factor == o.factor && low_freq_factor == o.low_freq_factor && high_freq_factor == o.high_freq_factor &&
           original_context == o.original_context;
  }
};

struct GptConfig {
  GptConfig() = default;
  // A shape with GPT-2's architecture (every other field at its default).
  GptConfig(std::string name_, int vocab_, int context_, int layers_, int channels_, int heads_)
      : name(std::move(name_)), vocab(vocab_), context(context_), layers(layers_), channels(channels_), heads(heads_) {}

  std::string name = "custom";
  int vocab = 256;    // V
  int context = 64;   // T (maximum sequence length)
  int layers = 2;     // L
  int channels = 64;  // C
  int heads = 4;      // H; C % H == 0
  int kv_heads = 0;   // KV: 0 = H; H % KV == 0
  int ffn = 0;        // F: 0 = 4C
  Norm norm = Norm::layernorm;
  double norm_eps = 1e-5;
  Positions positions = Positions::learned;
  double rope_theta = 10000;
  RopeScaling rope_scaling;
  Mlp mlp = Mlp::gelu;
  Bias bias = Bias::all;
  bool tied = true;   // the LM head is wte

  // Throws ConfigError naming the bad field.
  void validate() const;
  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  int ffn_size() const { return ffn > 0 ? ffn : 4 * channels; }
  int head_size() const { return channels / heads; }
  bool qkv_bias() const { return bias != Bias::none; }
  bool linear_bias() const { return bias == Bias::all; }
  // "gpt2" for GPT-2's architecture, else "llama" (every Llama-family
  // feature is a field: a Qwen2 shape is llama with bias qkv).
  std::string_view family() const;
  // Same shape and architecture (the name aside).
  bool same_architecture(const GptConfig& o) const;
  // One line: "NAME: V 256, T 64, L 2, C 64, H 4, KV 2, F 176, rmsnorm, rope
  // (theta 10000), swiglu, bias none, untied head, 125248 parameters".
  std::string describe() const;
  std::size_t num_params() const;
  // Model FLOPs per trained token (forward + backward), PaLM's formula
  // (Chowdhery et al. 2022, "PaLM", appendix B): 6 N + 12 L C T, where N
  // counts every parameter that takes part in a matrix multiply: all but
  // wpe and, when the head is untied, wte (lookups); a tied wte is counted
  // once, as the LM head. Grouped-query attention changes N (smaller K/V
  // projections), not the 12 L C T of the attention products.
  double flops_per_token(int seq_len) const;
};

// Presets: gpt-tiny (tests), gpt-mini (~10M, benchmarks here), gpt2-124m,
// gpt-1.3b, gpt-10b, gpt-18b, gpt-20b; llama-tiny, llama-mini (byte
// vocabulary, tests and the demo), llama3-8b, llama3-70b, qwen2.5-7b
// (docs/models.md lists shapes and sizes).
std::vector<std::string> gpt_preset_names();
// Throws ConfigError for an unknown name.
GptConfig gpt_preset(std::string_view name);

// A model named on a command line or in a config (`--model`): a preset
// name, a model description file (*.toml: the keys of docs/models.md), a
// Hugging Face config.json (GPT2LMHeadModel, LlamaForCausalLM,
// Qwen2ForCausalLM, MistralForCausalLM) or a directory holding one.
// Throws ConfigError naming the file and key for an unknown or
// inconsistent key, an unsupported architecture or an unknown name.
GptConfig load_model(const std::string& spec);
// Tensor parallelism (Megatron-LM's layers: Shoeybi et al. 2019, "Megatron-LM",
// section 3): a group of `size` ranks holds one copy of the model, each
// member (`rank`) a slice of every split tensor. Value type.
struct TpShard {
  int size = 1;
  int rank = 0;
  // Written out, not defaulted: the CUDA sources include this header as C++17 (src/CMakeLists.txt).
  bool operator==(const TpShard& o) const { return size == o.size && rank == o.rank; }
};
// How a tensor is split across a tensor-parallel group:
//   column      its output rows, by heads and MLP columns: attn_w and
//               attn_b (the member's query heads, then its key heads, then
//               its value heads: the key and value heads its query heads
//               read, tp_kv_heads, some of them held by the members beside
//               it too when tp does not divide the key/value heads), fc_w
//               and fc_b (SwiGLU: its gate rows,
//               then its up rows)
//   row         its input columns: proj_w [C, C/N] and fcproj_w [C, F/N]
//               (strided: one run per output row)
//   vocab       its vocabulary rows (Megatron's vocabulary-parallel embedding):
//               wte and an untied lm_head [V_r, C], member r's rows
//               [vocab_begin(), vocab_begin() + local_vocab()) (one range)
//   replicated  whole on every member: norms, the row-parallel layers'
//               biases (added once, after the group's sum), wpe
// Only split tensors differ between members; their gradients are the
// member's own, the replicated ones' equal on every member (the gradient
// norm counts them once), as are a shared key/value head's on the members
// sharing it (the model sums them over the group; TpSlice::owned_by says
// which member counts and saves them).
enum class TpSplit { replicated, column, row, vocab };
std::string_view tp_split_name(TpSplit s);  // "replicated", "column", "row", "vocab"
// Where a tensor's local elements lie in the whole tensor: `count` runs of
// `length` elements, run i at local + i * local_stride in the member's
// tensor and at global + i * global_stride in the whole one (elements from
// each tensor's first). `owner`: the member that owns the elements when
// several members hold them (a shared key/value head's rows: tp_kv_owner),
// -1 when the holder alone does. Value type.
struct TpSlice {
  std::size_t local = 0, global = 0, length = 0, count = 1, local_stride = 0, global_stride = 0;
  int owner = -1;
  bool owned_by(int tp_rank) const { return owner < 0 || owner == tp_rank; }
  bool operator==(const TpSlice& o) const {
    return local == o.local && global == o.global && length == o.length && count == o.count && local_stride == o.local_stride &&
           global_stride == o.global_stride && owner == o.owner;
  }
};

struct TensorInfo {
  std::string name;          // "wte", "h.0.attn_w", ..., "lnf_w"
  std::vector<int> shape;    // the member's (at tp 1, the whole tensor's)
  std::size_t offset = 0;    // elements from the start of the arena
  std::size_t unit_offset = 0;  // elements from the start of its unit
  std::size_t numel = 0;
  int unit = 0;
  bool decay = false;        // weight decay applies (matrices and embeddings only)
  TpSplit split = TpSplit::replicated;
  std::size_t global_offset = 0;  // the whole tensor's offset in the whole model's arena
  std::vector<TpSlice> slices;    // the member's elements in the whole tensor (covering all numel)
};

struct UnitInfo {
  std::string name;          // "embed", "block.0", ..., "head"
  std::size_t offset = 0;    // elements from the start of the arena
  std::size_t numel = 0;
};

// Offsets of a block unit's tensors inside the unit, in elements;
// kAbsent for a tensor the architecture does not have (biases, LayerNorm's bias).
inline constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
// The tensor at `offset` inside a unit's elements, or null when it is kAbsent.
template <class P>
P* tensor_at(P* unit, std::size_t offset) {
  return offset == kAbsent ? nullptr : unit + offset;
}
struct BlockOffsets {
  std::size_t ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
};
// Offsets inside the head unit: lnf_w, lnf_b (kAbsent for RMSNorm), lm_head (kAbsent when tied).
struct HeadOffsets {
  std::size_t lnf_w, lnf_b, lm_head;
};

// Which key/value head each query head reads in grouped-query attention:
// of the `count` key/value heads held, the h-th query head run reads head
// (offset + h) / group. The whole model's: count KV, group H / KV, offset
// 0 (whole_kv_heads); a tensor-parallel member's: tp_kv_heads. Value type.
struct KvHeads {
  int count = 1;
  int group = 1;   // query heads per key/value head, in the whole model
  int offset = 0;  // the first query head's place in its group
  int of(int h) const { return (offset + h) / group; }
  // The first of the H query heads run that reads held head j (H for j = count).
  int first_reader(int j, int H) const {
    const int q = j * group - offset;
    return q < 0 ? 0 : (q > H ? H : q);
  }
};
inline KvHeads whole_kv_heads(int H, int KV) { return {KV, H / KV, 0}; }

// Grouped-query attention under tensor parallelism (as Megatron-LM and vLLM
// run it): member r runs query heads [r H / tp, (r + 1) H / tp) and holds
// the key/value heads they read, from head `first` on. When tp divides the
// KV key/value heads these are KV / tp heads of its own. Otherwise a head
// can be read by the query heads of several members (all of them when tp is
// a multiple of KV; two beside each other, as 6 query heads over 3
// key/value heads at tp 2): each of them holds it whole (as Megatron-LM
// replicates the heads where tp exceeds them), computes the part of its
// gradient from its own query heads, and a group sum per block and
// micro-batch (tp_kv_grad_elements: every head's key and value rows and
// biases; 0 when tp divides KV) gives each of them the whole gradient. The
// first of them owns it (tp_kv_owner: counts it in the gradient norm,
// saves it); -1 for a head one member holds.
struct TpKvHeads {
  int first = 0;
  KvHeads heads;
};
TpKvHeads tp_kv_heads(const GptConfig& c, int tp, int rank);
int tp_kv_owner(const GptConfig& c, int tp, int head);
// The most key/value heads a member holds (what its buffers are sized for).
int tp_local_kv(const GptConfig& c, int tp);
std::size_t tp_kv_grad_elements(const GptConfig& c, int tp);

// The member of a tensor-parallel group of tp whose slices are the most
// elements (members differ by a vocabulary row or a key/value head; the
// first of the largest): the one whose memory decides whether a plan fits.
TpShard largest_member(const GptConfig& c, int tp);

// The arena of the whole model (tp 1) or of one tensor-parallel member's
// slices (TpShard): the same tensors and units in the same order, split
// tensors at their local shapes. Throws ConfigError (check_tp's) when the
// split does not divide the model.
class GptLayout {
 public:
  explicit GptLayout(const GptConfig& c, TpShard tp = {});
  const GptConfig& config() const { return config_; }
  const TpShard& tp() const { return tp_; }
  // The member's query heads, key/value heads and MLP columns (the whole model's at tp 1).
  int local_heads() const { return config_.heads / tp_.size; }
  int local_kv() const { return kv_heads().heads.count; }
  TpKvHeads kv_heads() const { return tp_kv_heads(config_, tp_.size, tp_.rank); }
  int local_ffn() const { return config_.ffn_size() / tp_.size; }
  // The member's vocabulary rows [vocab_begin(), vocab_begin() + local_vocab()): the vocabulary split as evenly
  // as it goes, the first V % N members one row more than the others (the whole vocabulary at tp 1).
  int vocab_begin() const { return vocab_first(tp_.rank); }
  int local_vocab() const { return vocab_first(tp_.rank + 1) - vocab_first(tp_.rank); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::vector<UnitInfo>& units() const { return units_; }
  std::size_t num_params() const { return total_; }
  const TensorInfo& tensor(std::string_view name) const;  // throws ConfigError
  const BlockOffsets& block() const { return block_; }
  const HeadOffsets& head() const { return head_; }
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
  TpShard tp_;
  std::vector<TensorInfo> tensors_;
  std::vector<UnitInfo> units_;
  BlockOffsets block_{};
  HeadOffsets head_{};
  std::size_t total_ = 0;
  int vocab_first(int rank) const;  // member `rank`'s first vocabulary row (rank = size: the vocabulary)
};

// Throws ConfigError naming the values unless tp >= 1 divides the model's
// heads and MLP size, and divides its key/value heads or is a multiple of
// them ("tp = 3 does not divide the 4 heads of model 'gpt-tiny'"), and is at
// most its vocabulary (which it need not divide: TpSplit::vocab).
void check_tp(const GptConfig& c, int tp);

// GPT-2 initialisation, deterministic in `seed`: weights N(0, 0.02), the two
// residual projections N(0, 0.02 / sqrt(2 L)), biases 0, norm weights 1.
void gpt_init(const GptLayout& layout, std::uint64_t seed, float* params);
// Elements [first, first + count) of gpt_init's array into out[0, count),
// the same bits, without computing the rest.
void gpt_init_range(const GptLayout& layout, std::uint64_t seed, std::size_t first, std::size_t count, float* out);

}  // namespace tierzero
