// Reading a whole file into memory, for the parsers of outside input
// (configs, system files, tokenizer files, checkpoints' metadata), or
// ranges of a large one (weights, checkpoint shards): each caller names
// what it read in its own error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tierzero {

// The file's bytes, or nullopt when it cannot be opened or read.
std::optional<std::string> read_file(const std::string& path);

// A file opened for reads at offsets (pread), so a reader holds only the
// ranges it asks for. Owns its descriptor (closed when destroyed); a
// const object may be read from several threads at once.
class InputFile {
 public:
  explicit InputFile(const std::string& path);  // is_open() is false when it cannot be opened
  ~InputFile();
  InputFile(InputFile&& o) noexcept;
  InputFile& operator=(InputFile&&) = delete;
  InputFile(const InputFile&) = delete;
  bool is_open() const { return fd_ >= 0; }
  std::uint64_t size() const { return size_; }
  // Reads `n` bytes at `offset`; false when the file ends first or a read fails.
  bool read_at(std::uint64_t offset, void* out, std::size_t n) const;

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace tierzero
