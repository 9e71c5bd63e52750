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
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tierzero/plan.h"
#include "tierzero/state_reader.h"
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
  // The tensor-parallel degree and level (tierzero/mesh.h) it was saved at: each rank's
  // files then hold its member's slices (GptLayout(model, TpShard{tp, r})) sharded over
  // the data-parallel ranks. Written only when tp > 1; the level's name ("" at tp 1).
  int tp = 1;
  std::string tp_level;
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
// CRC-32 (zlib's) of the bytes; `previous`: the CRC of the bytes before them, to checksum a file in pieces.
std::uint32_t crc32_of(const void* data, std::size_t bytes, std::uint32_t previous = 0);

// Removes what an interrupted save left in save directory `dir`
// (".tmp-step-*" directories, "latest.tmp"); returns their names. Call
// before a run starts writing there (no save may be in progress).
std::vector<std::string> remove_save_leftovers(const std::string& dir);

// Resolves "DIR" (a step directory, or a save directory whose `latest` names
// one) to the step directory. Throws FormatError when there is none, and
// when `latest` names anything but a step folder beside it ("step-" and
// digits: not "../x", "/x" or "step-1/..").
std::string resolve_checkpoint(const std::string& path);

// A checkpoint's metadata, its files checked and read by ranges, and, as
// a StateReader, the full fp32 master, m and v of its optim shards
// (whatever rank count, topology and plan saved them): a range reads from
// each shard file only the elements it holds, and each file is checked
// (size and CRC-32, read in pieces) before its first range is read. Holds
// the files it has read from open. One thread.
class CheckpointReader final : public StateReader {
 public:
  // Reads and validates meta.json; throws FormatError naming the file.
  explicit CheckpointReader(const std::string& path);
  const CheckpointMeta& meta() const { return meta_; }
  const std::string& dir() const { return dir_; }
  // The size meta.json records for file `name` (FormatError when it lists none).
  std::uint64_t file_bytes(const std::string& name) const;
  // Checks a file's size and CRC-32 against meta.json, reading it in
  // pieces; FormatError naming it when it is missing, truncated, too long or corrupt.
  void verify_file(const std::string& name) const;
  // Checks every file; returns one line per problem (empty when sound).
  std::vector<std::string> verify() const;
  // `bytes` of file `name` from `offset`, the file checked first (verify_file, once).
  void read_range(const std::string& name, std::uint64_t offset, void* out, std::size_t bytes);
  // StateReader: the optim shards' master, m and v in GptLayout order
  // (FormatError for a file that is damaged or whose size is not its layout's).
  void read(StatePart part, std::size_t first, std::size_t count, float* out) override;
  std::uint64_t bytes_read() const override { return bytes_read_; }
  bool has_moments() const override { return true; }
  // The whole master (export, sampling): the moments are not read.
  std::vector<float> read_full_master();

 private:
  // What reads keep (checkpoint_reader.cc): the saved optim layout, the files checked and open.
  struct Reading;
  Reading& reading();
  // Elements [first, first + count) of tensor-parallel member `member`'s arena (the whole model's at tp 1).
  void read_member(std::size_t member, StatePart part, std::size_t first, std::size_t count, float* out);
  std::string dir_;
  CheckpointMeta meta_;
  std::shared_ptr<Reading> reading_;  // made on the first read
  std::uint64_t bytes_read_ = 0;
};

// Writes `bytes` to path, fsyncs it; throws FormatError (disk full, unwritable).
// Page-aligned data (src/ckpt/page_buffer.h) goes to the disk without a copy
// into the page cache (O_DIRECT) where the filesystem allows it.
void write_file_synced(const std::string& path, const void* data, std::size_t bytes);

// Writes the checkpoint's fp32 master weights with tierzero's tensor names (`ckpt export --safetensors`).
void export_safetensors(CheckpointReader& ckpt, const std::string& path);

}  // namespace tierzero
