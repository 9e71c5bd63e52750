#include "ckpt/state_checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ckpt/checkpoint_writer.h"
#include "tierzero/error.h"

namespace tierzero {

namespace fs = std::filesystem;

namespace {
// A file written in pieces, its size and CRC-32 kept; synced when closed.
class PieceWriter {
 public:
  explicit PieceWriter(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    TZ_CHECK(f_, FormatError, "cannot write '" + path + "': " + std::strerror(errno));
  }
  ~PieceWriter() {
    if (f_) std::fclose(f_);
  }
  void write(const void* data, std::size_t bytes) {
    TZ_CHECK(std::fwrite(data, 1, bytes, f_) == bytes, FormatError, "cannot write '" + path_ + "': " + std::strerror(errno));
    crc_ = crc32_of(data, bytes, crc_);
    bytes_ += bytes;
  }
  // Flushes, syncs and closes; the record meta.json keeps.
  CheckpointFile close(const std::string& name) {
    const bool ok = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
    const bool closed = std::fclose(f_) == 0;
    f_ = nullptr;
    TZ_CHECK(ok && closed, FormatError, "cannot write '" + path_ + "' (disk full?)");
    return {name, bytes_, crc_};
  }

 private:
  std::string path_;
  std::FILE* f_;
  std::uint64_t bytes_ = 0;
  std::uint32_t crc_ = 0;
};
}  // namespace

void read_unit_shard(StateReader& from, StatePart part, const GptLayout& layout, const ShardLayout& s, int u, float* out) {
  const std::size_t valid = s.valid(layout, u);
  from.read(part, layout.units()[static_cast<std::size_t>(u)].offset + s.begin(u), valid, out);
  std::fill(out + valid, out + s.shard[static_cast<std::size_t>(u)], 0.0f);
}

std::string write_state_checkpoint(const std::string& dir, CheckpointMeta meta, StateReader& state) {
  TZ_CHECK(meta.tp == 1, ConfigError, "writing a state checkpoint at tp " + std::to_string(meta.tp) + ": whole-model layouts only");
  const GptLayout layout(meta.model);
  const Topology topo = Topology::parse(meta.topology, meta.world_size);
  const std::string name = step_dir_name(meta.step);
  const std::string problem = CheckpointWriter::prepare(dir, name);
  TZ_CHECK(problem.empty(), FormatError, problem);
  const fs::path tmp = CheckpointWriter::temporary(dir, name);
  const DType dtype = meta.train.param_dtype;
  const int units = static_cast<int>(layout.units().size());
  meta.files.clear();
  for (int r = 0; r < meta.world_size; ++r) {
    const StateLayouts s = StateLayouts::make(layout, topo, meta.plan, r);
    std::vector<float> slice(std::max(s.params.largest_shard(), s.optim.largest_shard()));
    std::vector<std::byte> narrow(s.params.largest_shard() * dtype_size(dtype));
    const std::string params_file = rank_file_name(r, "params"), optim_file = rank_file_name(r, "optim");
    PieceWriter params((tmp / params_file).string());
    for (int u = 0; u < units; ++u) {
      const std::size_t n = s.params.shard[static_cast<std::size_t>(u)];
      read_unit_shard(state, StatePart::master, layout, s.params, u, slice.data());
      from_f32(dtype, slice.data(), narrow.data(), n);
      params.write(narrow.data(), n * dtype_size(dtype));
    }
    meta.files.push_back(params.close(params_file));
    PieceWriter optim((tmp / optim_file).string());
    for (StatePart part : {StatePart::master, StatePart::m, StatePart::v})  // every unit's master, then m, then v
      for (int u = 0; u < units; ++u) {
        read_unit_shard(state, part, layout, s.optim, u, slice.data());
        optim.write(slice.data(), s.optim.shard[static_cast<std::size_t>(u)] * sizeof(float));
      }
    meta.files.push_back(optim.close(optim_file));
  }
  std::vector<std::string> warnings;
  return CheckpointWriter().commit(dir, name, meta, 0, warnings);
}

}  // namespace tierzero
