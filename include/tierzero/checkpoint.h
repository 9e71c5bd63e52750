// Sharded checkpoints (docs/formats.md). A checkpoint is a directory
//   DIR/step-NNNNNNNN/meta.json          model, training settings, plan,
//                                        topology, step, data position, RNG,
//                                        loss scale, size and CRC-32 of every file
//   DIR/step-NNNNNNNN/rank-RRRRR.params  that rank's working parameters (param dtype)
//   DIR/step-NNNNNNNN/rank-RRRRR.optim   that rank's fp32 master, Adam m, Adam v
//   DIR/latest                           the name of the newest complete step dir
// written under DIR/.tmp-step-NNNNNNNN and renamed only when every rank has
// finished, so a crash mid-save leaves the previous checkpoint intact.
// CheckpointReader reads one without MPI (inspect, export, resharding).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tierzero/plan.h"
#include "tierzero/train_config.h"

namespace tierzero {

struct CheckpointFile {
  std::string name;
  std::uint64_t bytes = 0;
  std::uint32_t crc32 = 0;
};

struct CheckpointMeta {
  std::int64_t step = 0;  // the next step to run
  std::int64_t optim_steps = 0;  // AdamW updates applied (steps minus skipped ones)
  GptConfig model;
  TrainConfig train;      // seed, batch, dtype, schedule, optimizer
  Plan plan;
  std::string topology;
  int world_size = 1;
  float loss_scale = 1;
  int good_steps = 0;
  std::string data_origin;
  std::vector<CheckpointFile> files;

  std::string to_json() const;
  // Throws FormatError naming `origin` for malformed metadata, and for a
  // file name that is not a plain name in the checkpoint's folder
  // (is_plain_file_name): "../x", "/etc/x", "a/b".
  static CheckpointMeta from_json(const std::string& text, const std::string& origin);
};

// A name of a file in a folder, no path: not empty, ".", "..", and without
// '/', '\\' or NUL.
bool is_plain_file_name(const std::string& name);

std::string step_dir_name(std::int64_t step);
// "rank-00003.params" / "rank-00003.optim"
std::string rank_file_name(int rank, const char* kind);
std::uint32_t crc32_of(const void* data, std::size_t bytes);

// Removes what an interrupted save left in save directory `dir`
// (".tmp-step-*" directories, "latest.tmp"); returns their names. Call
// before a run starts writing there (no save may be in progress).
std::vector<std::string> remove_save_leftovers(const std::string& dir);

// Resolves "DIR" (a step directory, or a save directory whose `latest` names
// one) to the step directory. Throws FormatError when there is none, and
// when `latest` names anything but a step folder beside it ("step-" and
// digits: not "../x", "/x" or "step-1/..").
std::string resolve_checkpoint(const std::string& path);

class CheckpointReader {
 public:
  // Reads and validates meta.json; throws FormatError naming the file.
  explicit CheckpointReader(const std::string& path);
  const CheckpointMeta& meta() const { return meta_; }
  const std::string& dir() const { return dir_; }
  // Reads a whole file, checking its size and CRC-32 against meta.json.
  std::vector<std::byte> read(const std::string& name) const;
  // Checks every file; returns one line per problem (empty when sound).
  std::vector<std::string> verify() const;
  // The full fp32 arrays (GptLayout order) from every rank's optim file.
  void read_full_optim(std::vector<float>& master, std::vector<float>& m, std::vector<float>& v) const;
  // Only the master weights (export, sampling): the moments are not kept.
  std::vector<float> read_full_master() const;

 private:
  // Fills the arrays of `out` (master, m, v) that are not null.
  void read_full(const std::array<std::vector<float>*, 3>& out) const;
  std::string dir_;
  CheckpointMeta meta_;
};

// Writes `bytes` to path, fsyncs it; throws FormatError (disk full, unwritable).
// Page-aligned data (src/ckpt/page_buffer.h) goes to the disk without a copy
// into the page cache (O_DIRECT) where the filesystem allows it.
void write_file_synced(const std::string& path, const void* data, std::size_t bytes);

// Full fp32 parameters for `model` from a safetensors file of tierzero
// tensor names (`tierzero ckpt export`) or of Hugging Face names, or from a
// Hugging Face directory (tierzero/hugging_face.h); throws
// FormatError on missing or misshapen tensors.
std::vector<float> load_safetensors_params(const std::string& path, const GptConfig& model);
void export_safetensors(const CheckpointReader& ckpt, const std::string& path);

}  // namespace tierzero
