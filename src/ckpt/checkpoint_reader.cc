// CheckpointReader (tierzero/checkpoint.h): a checkpoint's files checked
// and read by ranges, and its optim shards as the full state.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "ckpt/safetensors.h"
#include "core/read_file.h"
#include "model/model_file.h"
#include "plan/shard_layout.h"
#include "tierzero/checkpoint.h"
#include "tierzero/error.h"
#include "tierzero/mesh.h"

namespace tierzero {

namespace fs = std::filesystem;

namespace {
constexpr std::size_t kCheckPiece = std::size_t{4} << 20;  // bytes read at a time to checksum a file

// What meta.json records of file `name` (FormatError when it lists none).
const CheckpointFile& listed(const CheckpointMeta& meta, const std::string& dir, const std::string& name) {
  for (const CheckpointFile& f : meta.files)
    if (f.name == name) return f;
  TZ_THROW(FormatError, "checkpoint '" + dir + "' lists no file '" + name + "'");
}
}  // namespace

std::string resolve_checkpoint(const std::string& path) {
  if (fs::exists(fs::path(path) / "meta.json")) return path;
  const fs::path latest = fs::path(path) / "latest";
  std::ifstream in(latest);
  TZ_CHECK(in, FormatError, "'" + path + "' holds no checkpoint (no meta.json and no 'latest' file)");
  std::string name;
  std::getline(in, name);
  // Only a step folder beside `latest` (what step_dir_name writes): never a path that leads elsewhere.
  const bool step_name = name.size() > 5 && name.compare(0, 5, "step-") == 0 &&
                         std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; });
  TZ_CHECK(step_name, FormatError, "'" + latest.string() + "' names '" + name + "', which is not a step folder beside it (step-NNNNNNNN)");
  const fs::path dir = fs::path(path) / name;
  TZ_CHECK(fs::exists(dir / "meta.json"), FormatError, "'" + latest.string() + "' names '" + name + "', which is not a complete checkpoint");
  return dir.string();
}

// The optim layout the checkpoint was saved in, per tensor-parallel member
// (one, the whole model, at tp 1): the member's layout; every data
// position's shape is the same (ShardLayout's shard sizes and offsets);
// `rank_at` names the world rank whose file holds each position (the first
// of its cross group among the member's data ranks).
struct CheckpointReader::Reading {
  struct Member {
    GptLayout layout;
    ShardLayout saved;
    std::vector<int> rank_at;
  };
  std::vector<Member> members;
  std::map<std::string, InputFile> open;  // files checked, by name
};

CheckpointReader::CheckpointReader(const std::string& path) : dir_(resolve_checkpoint(path)) {
  const std::string meta_path = (fs::path(dir_) / "meta.json").string();
  const auto text = read_file(meta_path);
  TZ_CHECK(text, FormatError, "cannot read '" + meta_path + "'");
  meta_ = CheckpointMeta::from_json(*text, meta_path);
}

std::uint64_t CheckpointReader::file_bytes(const std::string& name) const { return listed(meta_, dir_, name).bytes; }

void CheckpointReader::verify_file(const std::string& name) const {
  const CheckpointFile& entry = listed(meta_, dir_, name);
  const std::uint64_t want = entry.bytes;
  const std::string path = (fs::path(dir_) / name).string();
  const InputFile file(path);
  TZ_CHECK(file.is_open(), FormatError, "checkpoint shard '" + path + "' is missing");
  const std::uint64_t size = file.size();
  TZ_CHECK(size == want, FormatError,
           "checkpoint shard '" + path + "' is " + (size < want ? "truncated" : "too long") + ": " + std::to_string(size) +
               " bytes, meta.json says " + std::to_string(want));
  std::vector<std::byte> piece(static_cast<std::size_t>(std::min<std::uint64_t>(size, kCheckPiece)));
  std::uint32_t crc = 0;
  for (std::uint64_t done = 0; done < size;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(size - done, piece.size()));
    TZ_CHECK(file.read_at(done, piece.data(), n), FormatError, "checkpoint shard '" + path + "' could not be read");
    crc = crc32_of(piece.data(), n, crc);
    done += n;
  }
  TZ_CHECK(crc == entry.crc32, FormatError, "checkpoint shard '" + path + "' is corrupt: CRC-32 does not match meta.json");
}

std::vector<std::string> CheckpointReader::verify() const {
  std::vector<std::string> problems;
  for (const CheckpointFile& f : meta_.files) {
    try {
      verify_file(f.name);
    } catch (const FormatError& e) {
      problems.push_back(e.message());
    }
  }
  return problems;
}

CheckpointReader::Reading& CheckpointReader::reading() {
  if (reading_) return *reading_;
  const Topology world = Topology::parse(meta_.topology, meta_.world_size);
  const int tp = meta_.tp;
  const MeshShape mesh{tp, tp > 1 ? std::optional<Level>(parse_level(meta_.tp_level)) : std::nullopt};
  Topology data = world;
  try {
    data = mesh.data_topology(world);
  } catch (const ConfigError& e) {
    TZ_THROW(FormatError, "checkpoint '" + dir_ + "': " + e.message());
  }
  auto reading = std::make_shared<Reading>();
  for (int m = 0; m < tp; ++m) {
    GptLayout layout(meta_.model, TpShard{tp, m});
    ShardLayout saved = ShardLayout::make(layout, data, meta_.plan.optim, 0);
    std::vector<int> rank_at(static_cast<std::size_t>(saved.group_size), -1);
    int d = 0;  // the member's data ranks, in world-rank order
    for (int r = 0; r < meta_.world_size; ++r) {
      if (mesh.tp_rank(world, r) != m) continue;
      const bool first = meta_.plan.optim ? data.cross_group(*meta_.plan.optim, d).front() == d : d == 0;  // one rank per distinct shard
      if (first) rank_at[static_cast<std::size_t>(ShardLayout::make(layout, data, meta_.plan.optim, d).position)] = r;
      ++d;
    }
    reading->members.push_back({std::move(layout), std::move(saved), std::move(rank_at)});
  }
  reading_ = std::move(reading);
  return *reading_;
}

void CheckpointReader::read_range(const std::string& name, std::uint64_t offset, void* out, std::size_t bytes) {
  auto& open = reading().open;
  auto it = open.find(name);
  if (it == open.end()) {
    verify_file(name);
    it = open.emplace(name, InputFile((fs::path(dir_) / name).string())).first;
  }
  TZ_CHECK(offset + bytes <= it->second.size() && it->second.read_at(offset, out, bytes), FormatError,
           "checkpoint shard '" + (fs::path(dir_) / name).string() + "' could not be read at byte " + std::to_string(offset));
  bytes_read_ += bytes;
}

void CheckpointReader::read(StatePart part, std::size_t first, std::size_t count, float* out) {
  const Reading& r = reading();
  if (r.members.size() == 1) return read_member(0, part, first, count, out);
  // The whole model's [first, first + count) from the members' slices (a replicated tensor from member 0's, a
  // shared key/value head from its owner's): each element read once.
  const std::size_t end = first + count;
  for (std::size_t m = 0; m < r.members.size(); ++m)
    for (const TensorInfo& t : r.members[m].layout.tensors()) {
      if ((t.split == TpSplit::replicated && m > 0) || t.global_offset >= end) continue;
      for (const TpSlice& s : t.slices) {
        if (!s.owned_by(static_cast<int>(m))) continue;
        for (std::size_t i = 0; i < s.count; ++i) {
          const std::size_t global = t.global_offset + s.global + i * s.global_stride;
          const std::size_t lo = std::max(global, first), hi = std::min(global + s.length, end);
          if (lo < hi) read_member(m, part, t.offset + s.local + i * s.local_stride + (lo - global), hi - lo, out + (lo - first));
        }
      }
    }
}

void CheckpointReader::read_member(std::size_t member, StatePart part, std::size_t first, std::size_t count, float* out) {
  const Reading::Member& r = reading().members[member];
  const std::size_t end = first + count, k = static_cast<std::size_t>(part);
  for (std::size_t u = 0; u < r.layout.units().size(); ++u) {
    const std::size_t u0 = r.layout.units()[u].offset, n = r.layout.units()[u].numel;
    if (u0 + n <= first || u0 >= end) continue;
    const std::size_t a = std::max(first, u0) - u0, b = std::min(end, u0 + n) - u0, s = r.saved.shard[u];
    for (std::size_t p = a / s; p * s < b; ++p) {  // the saved positions holding [a, b) of the unit
      const std::size_t lo = std::max(a, p * s), hi = std::min(b, (p + 1) * s);
      const int rank = r.rank_at[p];
      const std::string name = rank_file_name(rank, "optim");
      TZ_CHECK(file_bytes(name) == 3 * r.saved.total * sizeof(float), FormatError,
               "checkpoint '" + dir_ + "': rank " + std::to_string(rank) + "'s optim shard does not match its plan and topology");
      const std::size_t at = k * r.saved.total + r.saved.offset[u] + (lo - p * s);
      read_range(name, at * sizeof(float), out + (u0 + lo - first), (hi - lo) * sizeof(float));
    }
  }
}

std::vector<float> CheckpointReader::read_full_master() { return read_whole(*this, StatePart::master, GptLayout(meta_.model).num_params()); }

void export_safetensors(CheckpointReader& ckpt, const std::string& path) {
  const std::vector<float> master = ckpt.read_full_master();
  const GptLayout layout(ckpt.meta().model);
  SafeTensorsFile out;
  for (const TensorInfo& t : layout.tensors())
    out.tensors[t.name] = make_f32_tensor(std::vector<std::int64_t>(t.shape.begin(), t.shape.end()), master.data() + t.offset);
  out.metadata["format"] = "tierzero";
  out.metadata["model"] = nlohmann::json(model_json(ckpt.meta().model)).dump();
  out.metadata["step"] = std::to_string(ckpt.meta().step);
  write_safetensors(path, out);
}

}  // namespace tierzero
