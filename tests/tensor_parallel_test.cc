// Tensor parallelism's layout and layers (tierzero/gpt_config.h: TpShard,
// TpSplit, TpSlice; model/gpt.h's tp_sum): the members' slices tile each
// whole tensor exactly once, at the closed-form places of Megatron's
// splits; a member's view of a whole state reads exactly its slices; and a
// group of members run as threads of one process computes the whole
// model's loss and every gradient (in double precision), with and without
// recomputation and sequence parallelism, also when members share key/value
// heads (their gradients then equal on every holder, bit for bit), the same
// loss on every member and each member's probabilities its vocabulary
// columns of the whole model's, and the runs the members count in the
// gradient norm give the whole model's norm; the group's gradients are its
// loss's finite differences. A degree that does not divide
// the model's heads or MLP (or, with sequence parallelism, the sequence),
// or exceeds its vocabulary, is an error naming the values; one that does
// not divide the vocabulary splits it unevenly, one that does not divide
// the key/value heads has the members whose query heads read a head hold it.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <random>
#include <thread>
#include <tuple>

#include "ckpt/tp_member_reader.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "plan/shard_layout.h"
#include "tierzero/error.h"
#include "tierzero/state_reader.h"

namespace tierzero {
namespace {

// The shapes checked: GPT-2's (biases, GELU, tied), Llama's (GQA, SwiGLU,
// untied), Qwen2's (q/k/v biases, tied), one of 8 query and 4 key/value heads,
// a multi-query one (1 key/value head) and untied ones of a vocabulary that 2
// and 4 do not divide (259 = 130 + 129 = 65 + 65 + 65 + 64 rows), with learned
// positions and with RoPE; each at tp 2 and 4 (the multi-query one at 2): at
// tp 4 llama-tiny's and the Qwen2 shape's 2 key/value heads are each shared
// by 2 members, at tp 2 the multi-query head by both. And two whose key/value
// heads tp neither divides nor is a multiple of: 6 query heads over 3 at
// tp 2 (llama-mini's heads: member 0 reads heads 0 and 1, member 1 heads 1
// and 2), and 12 over 3 at tp 2 and 4 (at 4 the members hold 1, 2, 2 and 1
// heads, and member 1's query heads start in the middle of a group).
std::vector<GptConfig> models() {
  GptConfig qwen = gpt_preset("llama-tiny"), gqa8 = qwen, mqa = qwen, odd = gpt_preset("gpt-tiny"), gqa6 = qwen, gqa12 = qwen;
  qwen.name = "qwen-like", qwen.bias = Bias::qkv, qwen.tied = true;
  gqa8.name = "gqa-8", gqa8.heads = 8, gqa8.kv_heads = 4, gqa8.ffn = 96;
  mqa.name = "mqa", mqa.kv_heads = 1;
  odd.name = "odd-vocab", odd.vocab = 259, odd.tied = false;
  GptConfig odd_llama = gqa8;
  odd_llama.name = "odd-vocab-llama", odd_llama.vocab = 259;
  gqa6.name = "gqa-6-3", gqa6.channels = 48, gqa6.heads = 6, gqa6.kv_heads = 3;
  gqa12.name = "gqa-12-3", gqa12.channels = 48, gqa12.heads = 12, gqa12.kv_heads = 3, gqa12.bias = Bias::qkv;
  return {gpt_preset("gpt-tiny"), gpt_preset("llama-tiny"), qwen, gqa8, mqa, odd, odd_llama, gqa6, gqa12};
}
std::vector<int> degrees(const GptConfig& c) {
  return c.name == "mqa" || c.name == "gqa-6-3" ? std::vector<int>{2} : std::vector<int>{2, 4};
}

// How many members hold each element of a whole tensor: every member a replicated one's, the members whose query
// heads read a key/value head its key and value rows (past the C query rows of attn_w and attn_b), one member the rest.
int holders(const GptConfig& c, const TensorInfo& whole, TpSplit split, std::size_t element, int n) {
  if (split == TpSplit::replicated) return n;
  const bool qkv = whole.name.ends_with("attn_w") || whole.name.ends_with("attn_b");
  const std::size_t width = whole.shape.size() == 2 ? static_cast<std::size_t>(whole.shape[1]) : 1, row = element / width;
  if (!qkv || row < static_cast<std::size_t>(c.channels)) return 1;
  const int head = static_cast<int>((row - c.channels) / c.head_size()) % c.kv(), group = c.heads / c.kv();
  int count = 0;  // members with a query head in [head * group, (head + 1) * group)
  for (int r = 0; r < n; ++r) count += r * c.heads / n < (head + 1) * group && (r + 1) * c.heads / n > head * group;
  return count;
}

TEST(TensorParallel, EveryMembersSlicesTileEachWholeTensorOnce) {
  for (const GptConfig& c : models())
    for (int n : degrees(c)) {
      SCOPED_TRACE(c.name + " at tp " + std::to_string(n));
      const GptLayout whole(c);
      std::vector<GptLayout> members;
      for (int r = 0; r < n; ++r) members.emplace_back(c, TpShard{n, r});
      std::size_t member_total = 0;
      for (std::size_t i = 0; i < whole.tensors().size(); ++i) {
        const TensorInfo& w = whole.tensors()[i];
        std::vector<int> hits(w.numel, 0), owners(w.numel, 0);
        for (int r = 0; r < n; ++r) {
          const TensorInfo& t = members[r].tensors()[i];
          ASSERT_EQ(t.name, w.name);
          EXPECT_EQ(t.global_offset, w.offset) << t.name;
          if (t.split == TpSplit::vocab) {
            EXPECT_EQ(t.numel, static_cast<std::size_t>(members[r].local_vocab()) * c.channels) << t.name;
          }
          std::vector<int> local(t.numel, 0);
          for (const TpSlice& s : t.slices)
            for (std::size_t k = 0; k < s.count; ++k)
              for (std::size_t j = 0; j < s.length; ++j) {
                ++local.at(s.local + k * s.local_stride + j);
                ++hits.at(s.global + k * s.global_stride + j);
                owners.at(s.global + k * s.global_stride + j) += t.split == TpSplit::replicated ? r == 0 : s.owned_by(r);
              }
          EXPECT_EQ(std::count(local.begin(), local.end(), 1), static_cast<long>(t.numel)) << t.name << ": local elements covered once";
        }
        const TpSplit split = members[0].tensors()[i].split;
        for (std::size_t e = 0; e < w.numel; ++e) {
          ASSERT_EQ(hits[e], holders(c, w, split, e, n)) << w.name << " element " << e;
          ASSERT_EQ(owners[e], 1) << w.name << " element " << e;
        }
      }
      std::size_t largest = 0;  // the first member of the most parameters: the one the simulator prices
      for (std::size_t r = 0; r < members.size(); ++r) {
        member_total += members[r].num_params();
        if (members[r].num_params() > members[largest].num_params()) largest = r;
      }
      EXPECT_EQ(largest_member(c, n), (TpShard{n, static_cast<int>(largest)}));
      std::size_t replicated = 0;
      for (const TensorInfo& t : members[0].tensors())
        if (t.split == TpSplit::replicated) replicated += t.numel;
      // Each key/value head's rows (and biases) held by `holders` members: that less one extra copy of its 2 D rows
      // (key and value) in each block.
      std::size_t extra_heads = 0;
      const TensorInfo& attn = whole.tensor("h.0.attn_w");
      for (int h = 0; h < c.kv(); ++h)
        extra_heads += holders(c, attn, TpSplit::column, static_cast<std::size_t>(c.channels + h * c.head_size()) * c.channels, n) - 1;
      const std::size_t kv_extra = extra_heads * c.layers * 2 * c.head_size() * (c.channels + (c.qkv_bias() ? 1 : 0));
      EXPECT_EQ(member_total, whole.num_params() + (n - 1) * replicated + kv_extra);
    }
}

TEST(TensorParallel, SplitsArePlacedAsMegatronSplitsThem) {
  // gpt-tiny: C 64, H 4 (D 16), F 256; member 1 of 2.
  const GptLayout g(gpt_preset("gpt-tiny"), TpShard{2, 1});
  EXPECT_EQ(g.tensor("h.0.attn_w").shape, (std::vector<int>{96, 64}));
  EXPECT_EQ(g.tensor("h.0.attn_w").slices,  // its q rows 32..63, k rows 96..127, v rows 160..191
            (std::vector<TpSlice>{{0, 32 * 64, 32 * 64}, {32 * 64, 96 * 64, 32 * 64}, {64 * 64, 160 * 64, 32 * 64}}));
  EXPECT_EQ(g.tensor("h.0.attn_b").slices, (std::vector<TpSlice>{{0, 32, 32}, {32, 96, 32}, {64, 160, 32}}));
  EXPECT_EQ(g.tensor("h.1.proj_w").shape, (std::vector<int>{64, 32}));
  EXPECT_EQ(g.tensor("h.1.proj_w").slices, (std::vector<TpSlice>{{0, 32, 32, 64, 32, 64}}));  // columns 32..63 of each row
  EXPECT_EQ(g.tensor("h.0.fc_w").slices, (std::vector<TpSlice>{{0, 128 * 64, 128 * 64}}));
  EXPECT_EQ(g.tensor("h.0.fc_b").slices, (std::vector<TpSlice>{{0, 128, 128}}));
  EXPECT_EQ(g.tensor("h.0.fcproj_w").slices, (std::vector<TpSlice>{{0, 128, 128, 64, 128, 256}}));
  EXPECT_EQ(g.tensor("wte").split, TpSplit::vocab);  // its vocabulary rows 128..255
  EXPECT_EQ(g.tensor("wte").shape, (std::vector<int>{128, 64}));
  EXPECT_EQ(g.tensor("wte").slices, (std::vector<TpSlice>{{0, 128 * 64, 128 * 64}}));
  EXPECT_EQ(g.tensor("wpe").offset, 128u * 64);  // after the member's wte rows
  for (const char* name : {"wpe", "h.0.ln1_w", "h.0.ln1_b", "h.0.proj_b", "h.0.ln2_w", "h.0.fcproj_b", "lnf_w", "lnf_b"}) {
    EXPECT_EQ(g.tensor(name).split, TpSplit::replicated) << name;
    EXPECT_EQ(g.tensor(name).slices, (std::vector<TpSlice>{{0, 0, g.tensor(name).numel}})) << name;
  }
  EXPECT_EQ(g.tensor("h.0.attn_w").split, TpSplit::column);
  EXPECT_EQ(g.tensor("h.0.fcproj_w").split, TpSplit::row);
  EXPECT_EQ(tp_split_name(g.tensor("h.0.proj_w").split), "row");
  // llama-tiny: H 4, KV 2 (D 16), SwiGLU F 176; member 1 of 2: one query head pair, one key and one value head.
  const GptLayout l(gpt_preset("llama-tiny"), TpShard{2, 1});
  EXPECT_EQ(l.local_heads(), 2);
  EXPECT_EQ(l.local_kv(), 1);
  EXPECT_EQ(l.local_ffn(), 88);
  EXPECT_EQ(l.tensor("h.0.attn_w").slices,
            (std::vector<TpSlice>{{0, 32 * 64, 32 * 64}, {32 * 64, 80 * 64, 16 * 64}, {48 * 64, 112 * 64, 16 * 64}}));
  EXPECT_EQ(l.tensor("h.0.fc_w").slices, (std::vector<TpSlice>{{0, 88 * 64, 88 * 64}, {88 * 64, 264 * 64, 88 * 64}}));  // gate, up
  EXPECT_EQ(l.tensor("h.0.fcproj_w").shape, (std::vector<int>{64, 88}));
  EXPECT_EQ(l.tensor("lm_head").split, TpSplit::vocab);
  EXPECT_EQ(l.tensor("lm_head").slices, (std::vector<TpSlice>{{0, 128 * 64, 128 * 64}}));
  EXPECT_EQ(tp_split_name(TpSplit::vocab), "vocab");
  // A vocabulary of 259 in 4: the first 3 members one row more.
  GptConfig odd = gpt_preset("gpt-tiny");
  odd.vocab = 259;
  std::vector<std::pair<int, int>> rows;
  for (int r = 0; r < 4; ++r) {
    const GptLayout m(odd, TpShard{4, r});
    rows.emplace_back(m.vocab_begin(), m.local_vocab());
    EXPECT_EQ(m.tensor("wte").slices, (std::vector<TpSlice>{{0, static_cast<std::size_t>(m.vocab_begin()) * 64, static_cast<std::size_t>(m.local_vocab()) * 64}}));
  }
  EXPECT_EQ(rows, (std::vector<std::pair<int, int>>{{0, 65}, {65, 65}, {130, 65}, {195, 64}}));
  // llama-tiny at tp 4, member 3: query head 3 (rows 48..63) and the second key/value head, shared with member 2
  // (key rows 80..95, value rows 112..127), which owns it.
  const GptLayout shared(gpt_preset("llama-tiny"), TpShard{4, 3});
  EXPECT_EQ(shared.local_heads(), 1);
  EXPECT_EQ(shared.local_kv(), 1);
  EXPECT_EQ(shared.tensor("h.0.attn_w").shape, (std::vector<int>{48, 64}));
  const std::vector<TpSlice> mine = {
      {0, 48 * 64, 16 * 64}, {16 * 64, 80 * 64, 16 * 64, 1, 0, 0, 2}, {32 * 64, 112 * 64, 16 * 64, 1, 0, 0, 2}};  // owner 2
  EXPECT_EQ(shared.tensor("h.0.attn_w").slices, mine);
  EXPECT_EQ(GptLayout(gpt_preset("llama-tiny"), TpShard{4, 2}).tensor("h.1.attn_w").slices[1], mine[1]);
  EXPECT_TRUE(mine[1].owned_by(2));
  EXPECT_FALSE(mine[1].owned_by(3));
  EXPECT_EQ(tp_kv_owner(gpt_preset("llama-tiny"), 4, 1), 2);
  EXPECT_EQ(tp_kv_owner(gpt_preset("llama-tiny"), 2, 1), -1);
  EXPECT_EQ(tp_kv_grad_elements(gpt_preset("llama-tiny"), 4), 2u * 2 * 16 * 64);  // both heads' key and value rows
  EXPECT_EQ(tp_kv_grad_elements(gpt_preset("llama-tiny"), 2), 0u);
  // 12 query heads over 3 key/value heads (D 4) at tp 4: member 1 runs query heads 3..5, the last of head 0's group
  // and two of head 1's, so it holds heads 0 (owned by member 0) and 1 (its own, shared with member 2).
  GptConfig gqa12 = gpt_preset("llama-tiny");
  gqa12.channels = 48, gqa12.heads = 12, gqa12.kv_heads = 3;
  const TpKvHeads kv = tp_kv_heads(gqa12, 4, 1);
  EXPECT_EQ(kv.first, 0);
  EXPECT_EQ(kv.heads.count, 2);
  EXPECT_EQ(kv.heads.offset, 3);
  EXPECT_EQ(kv.heads.of(0), 0);
  EXPECT_EQ(kv.heads.of(1), 1);
  EXPECT_EQ(kv.heads.first_reader(1, 3), 1);
  std::vector<int> counts;
  for (int r = 0; r < 4; ++r) counts.push_back(tp_kv_heads(gqa12, 4, r).heads.count);
  EXPECT_EQ(counts, (std::vector<int>{1, 2, 2, 1}));
  EXPECT_EQ(tp_local_kv(gqa12, 4), 2);
  // The member the simulator prices: the most parameters, the first of them (members 1 and 2 hold 2 heads each).
  EXPECT_EQ(largest_member(gqa12, 4), (TpShard{4, 1}));
  EXPECT_GT(GptLayout(gqa12, TpShard{4, 1}).num_params(), GptLayout(gqa12, TpShard{4, 0}).num_params());
  GptConfig odd_vocab = gpt_preset("llama-tiny");  // every member one key/value head; a vocabulary of 259: member 0 a row more
  odd_vocab.vocab = 259;
  EXPECT_EQ(largest_member(odd_vocab, 4), (TpShard{4, 0}));
  EXPECT_EQ(largest_member(gpt_preset("llama-tiny"), 2), (TpShard{2, 0}));  // the members alike
  EXPECT_EQ(tp_kv_grad_elements(gqa12, 4), 2u * 3 * 4 * 48);
  const GptLayout mid(gqa12, TpShard{4, 1});  // rows: 12 query rows (12..23), 8 key rows (48.., 52..), 8 value rows (60.., 64..)
  EXPECT_EQ(mid.tensor("h.0.attn_w").slices, (std::vector<TpSlice>{{0, 12 * 48, 12 * 48},
                                                                     {12 * 48, 48 * 48, 4 * 48, 1, 0, 0, 0},
                                                                     {16 * 48, 52 * 48, 4 * 48, 1, 0, 0, 1},
                                                                     {20 * 48, 60 * 48, 4 * 48, 1, 0, 0, 0},
                                                                     {24 * 48, 64 * 48, 4 * 48, 1, 0, 0, 1}}));
}

// The member's view reads whole[r, 32 + c] at its proj_w[r, c], and any split of the member's arena into reads gives the same values.
TEST(TensorParallel, AMembersViewReadsItsSlicesOfTheWholeState) {
  const GptConfig c = gpt_preset("gpt-tiny");
  const GptLayout whole_layout(c), member(c, TpShard{2, 1});
  auto whole = seeded_weights(c, 5);
  const std::vector<float> all = read_whole(*whole, StatePart::master, whole_layout.num_params());
  auto view = tp_member_reader(*whole, member);
  const std::vector<float> mine = read_whole(*view, StatePart::master, member.num_params());
  const TensorInfo &wp = whole_layout.tensor("h.1.proj_w"), &mp = member.tensor("h.1.proj_w");
  for (std::size_t r = 0; r < 64; ++r)
    for (std::size_t col = 0; col < 32; ++col) ASSERT_EQ(mine[mp.offset + r * 32 + col], all[wp.offset + r * 64 + 32 + col]) << r << "," << col;
  const TensorInfo &wq = whole_layout.tensor("h.0.attn_w"), &mq = member.tensor("h.0.attn_w");
  EXPECT_EQ(mine[mq.offset + 32 * 64], all[wq.offset + 96 * 64]);  // its first key row is the whole's row C + C/2
  std::vector<float> chunked(mine.size());
  for (std::size_t first = 0; first < chunked.size(); first += 1001)
    view->read(StatePart::master, first, std::min<std::size_t>(1001, chunked.size() - first), chunked.data() + first);
  EXPECT_EQ(chunked, mine);
  // A shared key/value head (llama-tiny at tp 4): members 2 and 3 read the same whole rows, C + 16.. and C + 2 D + 16...
  const GptConfig l = gpt_preset("llama-tiny");
  const GptLayout whole_llama(l);
  auto llama = seeded_weights(l, 5);
  const std::vector<float> all_llama = read_whole(*llama, StatePart::master, whole_llama.num_params());
  const std::size_t w = whole_llama.tensor("h.1.attn_w").offset;
  for (int r : {2, 3}) {
    const GptLayout m(l, TpShard{4, r});
    const std::vector<float> got = read_whole(*tp_member_reader(*llama, m), StatePart::master, m.num_params());
    const std::size_t at = m.tensor("h.1.attn_w").offset;
    for (std::size_t i = 0; i < 32 * 64; ++i) {  // its key rows, then its value rows
      ASSERT_EQ(got[at + 16 * 64 + i], all_llama[w + (80 + (i < 16 * 64 ? 0 : 16)) * 64 + i]) << "member " << r << " element " << i;
    }
  }
}

// The group's collectives for members running as threads: sums add the buffers in member order, so all get the same bits.
class ThreadGroup {
 public:
  explicit ThreadGroup(int n) : bufs_(n), sync_(n) {}
  void sum(int member, double* buf, std::size_t n) {
    bufs_[member] = buf;
    sync_.arrive_and_wait();
    std::vector<double> total(n, 0.0);
    for (const double* b : bufs_)
      for (std::size_t i = 0; i < n; ++i) total[i] += b[i];
    sync_.arrive_and_wait();
    std::copy(total.begin(), total.end(), buf);
    sync_.arrive_and_wait();
  }
  void all_gather(int member, const double* send, double* recv, std::size_t n) {
    bufs_[member] = send;
    sync_.arrive_and_wait();
    for (std::size_t j = 0; j < bufs_.size(); ++j) std::copy_n(bufs_[j], n, recv + j * n);
    sync_.arrive_and_wait();
  }
  void reduce_scatter(int member, const double* send, double* recv, std::size_t n) {
    bufs_[member] = send;
    sync_.arrive_and_wait();
    std::fill_n(recv, n, 0.0);
    for (const double* b : bufs_)
      for (std::size_t i = 0; i < n; ++i) recv[i] += b[member * n + i];
    sync_.arrive_and_wait();
  }
  TpGroup<double> member(int r, bool sp) {
    return {.sum = [this, r](double* buf, std::size_t n) { sum(r, buf, n); },
            .all_gather = [this, r](const double* send, double* recv, std::size_t n) { all_gather(r, send, recv, n); },
            .reduce_scatter = [this, r](const double* send, double* recv, std::size_t n) { reduce_scatter(r, send, recv, n); },
            .sequence_parallel = sp,
            .start_sum = {},  // blocking collectives only: the model then calls the blocking ones
            .start_all_gather = {},
            .start_reduce_scatter = {},
            .finish = {}};
  }

 private:
  std::vector<const double*> bufs_;
  std::barrier<> sync_;
};

// A member's parameters: its slices of the whole model's `whole`.
std::vector<double> member_params(const GptLayout& m, const std::vector<double>& whole) {
  std::vector<double> mine(m.num_params());
  for (const TensorInfo& t : m.tensors())
    for (const TpSlice& s : t.slices)
      for (std::size_t k = 0; k < s.count; ++k)
        std::copy_n(whole.begin() + t.global_offset + s.global + k * s.global_stride, s.length, mine.begin() + t.offset + s.local + k * s.local_stride);
  return mine;
}

// B 3, T 8: under sequence parallelism at tp 2 and 4 a member's rows cross from one sequence into the next.
TEST(TensorParallel, AGroupOfMembersComputesTheWholeModelsLossAndGradients) {
  const int B = 3, T = 8;
  std::vector<int> tokens(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) tokens[i] = (i * 37 + 11) % 256, targets[i] = (i * 53 + 7) % 256;
  for (const GptConfig& c : models())
    for (int n : degrees(c))
      for (bool recompute : {false, true})
        for (bool sp : {false, true}) {
          SCOPED_TRACE(c.name + " at tp " + std::to_string(n) + (recompute ? ", recomputing" : "") + (sp ? ", sequence parallel" : ""));
          const GptLayout whole(c);
          std::vector<float> init(whole.num_params());
          gpt_init(whole, 42, init.data());
          std::vector<double> params(init.begin(), init.end());
          std::mt19937 g(1);  // generic biases and norms, so that their gradients are too
          std::normal_distribution<double> d(0.0, 0.1);
          for (const TensorInfo& t : whole.tensors())
            if (t.shape.size() == 1)
              for (std::size_t i = 0; i < t.numel; ++i) params[t.offset + i] += d(g);
          GptModel<double> reference(whole, B, T, recompute);
          std::vector<double> ref_grads(whole.num_params(), 0.0);
          reference.forward(params.data(), tokens.data(), targets.data());
          const std::vector<double> ref_probs(reference.probs(), reference.probs() + static_cast<std::size_t>(B) * T * c.vocab);
          const double ref_loss = reference.forward_backward(params.data(), ref_grads.data(), tokens.data(), targets.data());

          ThreadGroup group(n);
          std::vector<GptLayout> members;
          for (int r = 0; r < n; ++r) members.emplace_back(c, TpShard{n, r});
          std::vector<std::vector<double>> grads(n);
          std::vector<double> losses(n), worst_probs(n, 1.0);
          std::vector<std::thread> threads;
          for (int r = 0; r < n; ++r)
            threads.emplace_back([&, r] {
              const GptLayout& m = members[r];
              std::vector<double> mine = member_params(m, params);
              GptModel<double> model(m, B, T, recompute, group.member(r, sp));
              // The member's probabilities: its vocabulary columns of the whole model's, [B T, local_vocab()].
              model.forward(mine.data(), tokens.data(), targets.data());
              const std::size_t V = m.local_vocab(), v0 = m.vocab_begin();
              worst_probs[r] = 0;
              for (std::size_t row = 0; row < static_cast<std::size_t>(B) * T; ++row)
                for (std::size_t v = 0; v < V; ++v)
                  worst_probs[r] = std::max(worst_probs[r], std::abs(model.probs()[row * V + v] - ref_probs[row * c.vocab + v0 + v]));
              grads[r].assign(m.num_params(), 0.0);
              losses[r] = model.forward_backward(mine.data(), grads[r].data(), tokens.data(), targets.data());
            // The buffers the memory model counts (at 1/n of the stream's rows with sequence parallelism).
            EXPECT_EQ(model.activation_bytes(),
                      gpt_activation_elements(c, B, T, recompute, ops::attention_scratch(T, m.local_heads()), n, sp) * sizeof(double));
            });
          for (std::thread& t : threads) t.join();
          double worst = 0;
          for (int r = 0; r < n; ++r) {
            EXPECT_NEAR(losses[r], ref_loss, 1e-12 * ref_loss) << "member " << r;
            EXPECT_EQ(losses[r], losses[0]) << "member " << r << ": the loss is the group's, the same bits on every member";
            EXPECT_LT(worst_probs[r], 1e-15) << "member " << r;
            for (std::size_t i = 0; i < members[r].tensors().size(); ++i)
              for (const TensorInfo& t = members[r].tensors()[i]; const TpSlice& s : t.slices)
                for (std::size_t k = 0; k < s.count; ++k)
                  for (std::size_t j = 0; j < s.length; ++j) {
                    const double mine = grads[r][t.offset + s.local + k * s.local_stride + j];
                    const double ref = ref_grads[t.global_offset + s.global + k * s.global_stride + j];
                    worst = std::max(worst, std::abs(mine - ref));
                    if (t.split == TpSplit::replicated && r > 0) {  // equal on every member, bit for bit
                      ASSERT_EQ(mine, grads[0][members[0].tensors()[i].offset + s.local + j]) << t.name;
                    }
                    if (!s.owned_by(r)) {  // a shared key/value head's: its owner's, bit for bit
                      const TensorInfo& there = members[s.owner].tensors()[i];
                      const TpSlice& same = *std::find_if(there.slices.begin(), there.slices.end(),
                                                          [&](const TpSlice& o) { return o.global == s.global; });
                      ASSERT_EQ(mine, grads[s.owner][there.offset + same.local + j]) << t.name;
                    }
                  }
          }
          // The same sums in another order: double rounding (gradients are of order 1e-2..1).
          EXPECT_LT(worst, 1e-12);
          // The gradient norm: the runs each member counts (its state held whole) add up to the whole model's, each
          // replicated tensor and shared key/value head counted once.
          double ref_squares = 0, squares = 0;
          for (double g : ref_grads) ref_squares += g * g;
          for (int r = 0; r < n; ++r)
            for (const ShardSegment& seg : norm_segments(members[r], ShardLayout::make(members[r], Topology::flat(1), std::nullopt, 0)))
              for (std::size_t i = 0; i < seg.length; ++i) squares += grads[r][seg.offset + i] * grads[r][seg.offset + i];
          EXPECT_NEAR(squares, ref_squares, 1e-12 * ref_squares);
        }
}

// The group's own gradients against finite differences of the group's loss (the whole model's parameters
// perturbed, each member running its slices of them: a replicated element on every member, a shared key/value
// head's on each holder), in double precision: gpt-tiny at tp 2 with sequence parallelism, llama-tiny at tp 4
// (its key/value heads shared) and 12 query heads over 3 key/value heads at tp 4 with sequence parallelism (heads
// held by two members, 1 or 2 per member), three elements of every tensor, each member's gradient of the elements it holds
// within 1e-7 + 1e-6 |g| of (L(p + h) - L(p - h)) / 2h at h = 1e-5 (central differences err by ~h^2 f''' and
// eps L / h: ~1e-9 here). A gradient a member misses or holds twice is off by its whole size.
TEST(TensorParallel, TheGroupsGradientsAreItsLossesFiniteDifferences) {
  const int B = 2, T = 8;
  std::vector<int> tokens(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) tokens[i] = (i * 37 + 11) % 256, targets[i] = (i * 53 + 7) % 256;
  GptConfig gqa12 = gpt_preset("llama-tiny");  // members holding 1, 2, 2 and 1 of its 3 key/value heads
  gqa12.name = "gqa-12-3", gqa12.channels = 48, gqa12.heads = 12, gqa12.kv_heads = 3;
  for (const auto& [c, n, sp] : {std::tuple{gpt_preset("gpt-tiny"), 2, true}, std::tuple{gpt_preset("llama-tiny"), 4, false},
                                 std::tuple{gqa12, 4, true}}) {
    SCOPED_TRACE(c.name + " at tp " + std::to_string(n));
    const GptLayout whole(c);
    std::vector<float> init(whole.num_params());
    gpt_init(whole, 7, init.data());
    std::vector<double> params(init.begin(), init.end());
    std::mt19937 g(3);  // generic norms and biases
    std::normal_distribution<double> d(0.0, 0.1);
    for (const TensorInfo& t : whole.tensors())
      if (t.shape.size() == 1)
        for (std::size_t i = 0; i < t.numel; ++i) params[t.offset + i] += d(g);
    std::vector<GptLayout> members;
    for (int r = 0; r < n; ++r) members.emplace_back(c, TpShard{n, r});
    // The group's loss at `p`, each member's gradients into `grads` when given.
    auto group_loss = [&](const std::vector<double>& p, std::vector<std::vector<double>>* grads) {
      ThreadGroup group(n);
      std::vector<double> losses(n);
      std::vector<std::thread> threads;
      for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
          const std::vector<double> mine = member_params(members[r], p);
          GptModel<double> model(members[r], B, T, false, group.member(r, sp));
          if (!grads) {
            losses[r] = model.forward(mine.data(), tokens.data(), targets.data());
            return;
          }
          (*grads)[r].assign(members[r].num_params(), 0.0);
          losses[r] = model.forward_backward(mine.data(), (*grads)[r].data(), tokens.data(), targets.data());
        });
      for (std::thread& t : threads) t.join();
      return losses[0];
    };
    std::vector<std::vector<double>> grads(n);
    group_loss(params, &grads);
    constexpr double h = 1e-5;
    int checked = 0;
    for (std::size_t i = 0; i < whole.tensors().size(); ++i) {
      const TensorInfo& t = whole.tensors()[i];
      for (const std::size_t e : {std::size_t{0}, t.numel / 2 + 1, t.numel - 1}) {
        std::vector<double> p = params;
        p[t.offset + e] += h;
        const double up = group_loss(p, nullptr);
        p[t.offset + e] -= 2 * h;
        const double fd = (up - group_loss(p, nullptr)) / (2 * h);
        // Every member holding the element: its gradient there.
        int holding = 0;
        for (int r = 0; r < n; ++r)
          for (const TensorInfo& m = members[r].tensors()[i]; const TpSlice& s : m.slices)
            for (std::size_t k = 0; k < s.count; ++k) {
              const std::size_t from = s.global + k * s.global_stride;
              if (e < from || e >= from + s.length) continue;
              const double mine = grads[r][m.offset + s.local + k * s.local_stride + (e - from)];
              EXPECT_NEAR(mine, fd, 1e-7 + 1e-6 * std::abs(fd)) << t.name << " element " << e << " on member " << r;
              ++holding;
            }
        EXPECT_GE(holding, 1) << t.name << " element " << e;
        ++checked;
      }
    }
    EXPECT_EQ(checked, 3 * static_cast<int>(whole.tensors().size()));
  }
}

TEST(TensorParallel, ADegreeThatDoesNotDivideTheModelNamesTheValues) {
  auto error_of = [](const GptConfig& c, int tp) -> std::string {
    try {
      GptLayout layout(c, TpShard{tp, 0});
    } catch (const ConfigError& e) {
      return e.message();
    }
    return "";
  };
  EXPECT_EQ(error_of(gpt_preset("gpt-tiny"), 3), "tp = 3 does not divide the 4 heads of model 'gpt-tiny'");
  GptConfig gqa6 = gpt_preset("llama-tiny");  // 6 query heads, 2 key/value heads
  gqa6.name = "gqa-6", gqa6.channels = 96, gqa6.heads = 6, gqa6.ffn = 192;
  EXPECT_EQ(error_of(gqa6, 3), "");  // member 1's query heads read both key/value heads
  EXPECT_EQ(error_of(gqa6, 2), "");
  EXPECT_EQ(error_of(gpt_preset("llama-tiny"), 4), "");  // its 2 key/value heads shared by 2 members each
  GptConfig odd = gpt_preset("gpt-tiny");
  odd.ffn = 90;
  EXPECT_EQ(error_of(odd, 4), "tp = 4 does not divide the 90 MLP columns (ffn) of model 'gpt-tiny'");
  EXPECT_EQ(error_of(gpt_preset("gpt-tiny"), 0), "tp = 0: the tensor-parallel degree must be at least 1");
  EXPECT_EQ(error_of(gpt_preset("gpt-tiny"), 1), "");
  GptConfig two_tokens = gpt_preset("gpt-tiny");
  two_tokens.vocab = 2;
  EXPECT_EQ(error_of(two_tokens, 4), "tp = 4 exceeds the vocabulary of 2 of model 'gpt-tiny'");
  EXPECT_EQ(error_of(two_tokens, 2), "");  // a row each
  const GptLayout split(gpt_preset("gpt-tiny"), TpShard{2, 0});
  EXPECT_THROW(GptModel<float>(split, 1, 8), ConfigError);  // a member without its group's sum and all-gather
  auto sp_error_of = [](const GptLayout& layout, int seq_len) -> std::string {
    ThreadGroup group(layout.tp().size);
    try {
      GptModel<double>(layout, 1, seq_len, false, group.member(0, true));
    } catch (const ConfigError& e) {
      return e.message();
    }
    return "";
  };
  EXPECT_EQ(sp_error_of(GptLayout(gpt_preset("gpt-tiny"), TpShard{4, 0}), 6),
            "sequence parallelism: tp = 4 does not divide the sequence length 6");
  EXPECT_EQ(sp_error_of(GptLayout(gpt_preset("gpt-tiny")), 8), "sequence parallelism needs tp > 1 (tp = 1)");
  EXPECT_EQ(sp_error_of(GptLayout(gpt_preset("gpt-tiny"), TpShard{4, 0}), 8), "");
}

}  // namespace
}  // namespace tierzero
