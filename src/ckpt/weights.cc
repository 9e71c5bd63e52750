// StateReader's weights sources (tierzero/state_reader.h): safetensors
// files of tierzero's or Hugging Face's names, Hugging Face directories,
// and a seed's initialisation.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "ckpt/hf_names.h"
#include "ckpt/safetensors.h"
#include "ckpt/safetensors_reader.h"
#include "core/read_file.h"
#include "tierzero/error.h"
#include "tierzero/state_reader.h"

namespace tierzero {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// A stored tensor: the file that holds it and its entry there.
struct Located {
  SafeTensorsReader* file;
  const SafeTensorEntry* entry;
};

// The files of a Hugging Face directory: model.safetensors, or the shards
// that model.safetensors.index.json's weight_map names (each name looked up
// in its shard only); FormatError for a malformed index, a shard that is
// not a file beside it or does not hold a tensor it is said to.
std::map<std::string, Located> open_hf_dir(const fs::path& d, std::vector<std::unique_ptr<SafeTensorsReader>>& files) {
  const fs::path index = d / "model.safetensors.index.json";
  std::map<std::string, Located> at;
  if (!fs::exists(index)) {
    files.push_back(std::make_unique<SafeTensorsReader>((d / "model.safetensors").string()));
    for (const auto& [name, e] : files.back()->header().tensors) at[name] = {files.back().get(), &e};
    return at;
  }
  const std::string where = "'" + index.string() + "'";
  json j;
  try {
    auto text = read_file(index.string());
    TZ_CHECK(text, FormatError, "cannot read " + where);
    j = json::parse(*text);
  } catch (const json::exception& e) {
    TZ_THROW(FormatError, where + " is not valid JSON: " + e.what());
  }
  TZ_CHECK(j.is_object() && j.contains("weight_map") && j.at("weight_map").is_object(), FormatError, where + " has no weight_map object");
  std::map<std::string, std::vector<std::string>> by_shard;
  for (auto it = j.at("weight_map").begin(); it != j.at("weight_map").end(); ++it) {
    TZ_CHECK(it.value().is_string(), FormatError, where + ": weight_map['" + it.key() + "'] must name a file");
    const std::string shard = it.value().get<std::string>();
    TZ_CHECK(shard.find('/') == std::string::npos, FormatError, where + ": shard '" + shard + "' is not a file beside the index");
    by_shard[shard].push_back(it.key());
  }
  for (const auto& [shard, names] : by_shard) {
    files.push_back(std::make_unique<SafeTensorsReader>((d / shard).string()));
    const auto& tensors = files.back()->header().tensors;
    for (const std::string& name : names) {
      const auto t = tensors.find(name);
      TZ_CHECK(t != tensors.end(), FormatError, where + " puts '" + name + "' in " + shard + ", which does not hold it");
      at[name] = {files.back().get(), &t->second};
    }
  }
  return at;
}

// Where each of the model's tensors is stored, for `at`'s names: tierzero's own, or either Hugging Face family's.
std::vector<StoredTensor> stored_tensors(const std::map<std::string, Located>& at, const GptConfig& model, bool hf_dir,
                                         const std::string& where) {
  const HasTensor has = [&at](const std::string& name) { return at.count(name) > 0; };
  const bool gpt2 = has_hf_gpt2_names(has), llama = has_hf_llama_names(has);
  if (!gpt2 && !llama) {
    TZ_CHECK(!hf_dir, FormatError, where + " holds neither GPT-2 nor Llama-family tensors in Hugging Face's names");
    std::vector<StoredTensor> own;
    const GptLayout layout(model);
    for (const TensorInfo& t : layout.tensors())
      own.push_back({t.name, {{t.name, std::vector<std::int64_t>(t.shape.begin(), t.shape.end())}}});
    return own;
  }
  TZ_CHECK(gpt2 == (model.family() == "gpt2"), FormatError,
           where + " holds " + (gpt2 ? "GPT-2" : "Llama-family") + " tensors, but the model is " + model.describe());
  if (gpt2) return hf_gpt2_tensors(model, has);
  try {
    return hf_llama_tensors(model);
  } catch (const ConfigError& e) {
    TZ_THROW(FormatError, where + ": " + e.message());
  }
}

// A model's weights in safetensors files: each read takes from the files
// only the stored elements of the range (a transposed part row by row:
// the columns of the range's rows).
class StoredWeights final : public StateReader {
 public:
  StoredWeights(std::vector<std::unique_ptr<SafeTensorsReader>> files, const std::map<std::string, Located>& at, const GptConfig& model,
                const std::vector<StoredTensor>& stored, std::string where)
      : files_(std::move(files)), where_(std::move(where)) {
    const GptLayout layout(model);
    for (const StoredTensor& s : stored) {
      const TensorInfo& t = layout.tensor(s.ours);
      Tensor out{t.offset, t.numel, {}};
      std::size_t offset = 0;
      for (const StoredPart& p : s.parts) {
        const auto it = at.find(p.name);
        TZ_CHECK(it != at.end(), FormatError,
                 where_ + " has no tensor '" + p.name + "' (is it " + model.name + " with " + std::to_string(model.layers) + " layers?)");
        TZ_CHECK(it->second.entry->shape == p.shape, FormatError,
                 where_ + ": tensor '" + p.name + "' has the wrong shape for model " + model.name);
        const std::size_t n = shape_numel(p.shape);
        // tierzero's [out, in] rows: a transposed part is stored [in, out].
        const std::size_t cols = p.shape.size() == 2 ? static_cast<std::size_t>(p.transposed ? p.shape[0] : p.shape[1]) : n;
        out.parts.push_back({p.name, it->second, offset, n, cols, p.transposed});
        offset += n;
      }
      TZ_CHECK(offset == t.numel, Error, "stored parts of '" + s.ours + "' do not add up to it");
      tensors_.push_back(std::move(out));
    }
    std::sort(tensors_.begin(), tensors_.end(), [](const Tensor& a, const Tensor& b) { return a.offset < b.offset; });
  }

  void read(StatePart part, std::size_t first, std::size_t count, float* out) override {
    if (part != StatePart::master) {
      std::fill(out, out + count, 0.0f);
      return;
    }
    const std::size_t end = first + count;
    for (const Tensor& t : tensors_) {
      if (t.offset + t.numel <= first || t.offset >= end) continue;
      for (const Part& p : t.parts) {
        const std::size_t base = t.offset + p.offset;  // the part's first element in the full array
        const std::size_t lo = std::max(first, base), hi = std::min(end, base + p.numel);
        if (lo >= hi) continue;
        if (p.transposed) read_transposed(p, lo - base, hi - base, out + (lo - first));
        else read_rows(p, lo - base, hi - base, out + (lo - first));
      }
    }
  }

  std::uint64_t bytes_read() const override {
    std::uint64_t n = 0;
    for (const auto& f : files_) n += f->bytes_read();
    return n;
  }
  bool has_moments() const override { return false; }

 private:
  struct Part {
    std::string name;
    Located at;
    std::size_t offset, numel;  // within tierzero's tensor
    std::size_t cols;           // of tierzero's [rows, cols]
    bool transposed;
  };
  struct Tensor {
    std::size_t offset, numel;  // in the full array
    std::vector<Part> parts;
  };

  // Elements [a, b) of the part, stored in tierzero's order.
  void read_rows(const Part& p, std::size_t a, std::size_t b, float* out) {
    p.at.file->read_f32(*p.at.entry, a, b - a, out);
    for (std::size_t i = 0; i < b - a; ++i) check_finite(p, out[i], a + i);
  }

  // Elements [a, b) of tierzero's [rows, cols] from the stored [cols, rows]:
  // for each stored row, the columns of rows a / cols .. (b - 1) / cols.
  void read_transposed(const Part& p, std::size_t a, std::size_t b, float* out) {
    const std::size_t cols = p.cols, rows = p.numel / cols;
    const std::size_t r0 = a / cols, r1 = (b - 1) / cols + 1;
    row_.resize(r1 - r0);
    for (std::size_t k = 0; k < cols; ++k) {
      p.at.file->read_f32(*p.at.entry, k * rows + r0, r1 - r0, row_.data());
      for (std::size_t r = r0; r < r1; ++r) {
        const std::size_t e = r * cols + k;  // tierzero's element
        if (e < a || e >= b) continue;
        check_finite(p, row_[r - r0], k * rows + r);
        out[e - a] = row_[r - r0];
      }
    }
  }

  void check_finite(const Part& p, float x, std::size_t stored_index) const {
    TZ_CHECK(std::isfinite(x), FormatError,
             where_ + ": tensor '" + p.name + "' holds a non-finite value (" + std::to_string(x) + " at element " +
                 std::to_string(stored_index) + "); training from it would give NaN");
  }

  std::vector<std::unique_ptr<SafeTensorsReader>> files_;
  std::string where_;
  std::vector<Tensor> tensors_;  // by offset
  std::vector<float> row_;       // one stored row's columns (transposed parts)
};

class SeededWeights final : public StateReader {
 public:
  SeededWeights(const GptConfig& model, std::uint64_t seed) : layout_(model), seed_(seed) {}
  void read(StatePart part, std::size_t first, std::size_t count, float* out) override {
    if (part == StatePart::master) gpt_init_range(layout_, seed_, first, count, out);
    else std::fill(out, out + count, 0.0f);
  }
  std::uint64_t bytes_read() const override { return 0; }
  bool has_moments() const override { return false; }

 private:
  GptLayout layout_;
  std::uint64_t seed_;
};
}  // namespace

std::unique_ptr<StateReader> open_weights(const std::string& path, const GptConfig& model) {
  const std::string where = "'" + path + "'";
  const bool dir = fs::is_directory(path);
  std::vector<std::unique_ptr<SafeTensorsReader>> files;
  std::map<std::string, Located> at;
  if (dir) {
    at = open_hf_dir(path, files);
  } else {
    files.push_back(std::make_unique<SafeTensorsReader>(path));
    for (const auto& [name, e] : files.back()->header().tensors) at[name] = {files.back().get(), &e};
  }
  const std::vector<StoredTensor> stored = stored_tensors(at, model, dir, where);
  return std::make_unique<StoredWeights>(std::move(files), at, model, stored, where);
}

std::unique_ptr<StateReader> seeded_weights(const GptConfig& model, std::uint64_t seed) {
  return std::make_unique<SeededWeights>(model, seed);
}

std::vector<float> read_whole(StateReader& from, StatePart part, std::size_t n) {
  std::vector<float> out(n);
  from.read(part, 0, n, out.data());
  return out;
}

}  // namespace tierzero
