// write_file_synced (tierzero/checkpoint.h): every size and alignment
// comes back byte for byte, and page-aligned data (ckpt/page_buffer.h)
// bypasses the page cache (O_DIRECT) up to its last whole page, which
// mincore() sees as pages of the file that are not resident after the write.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ckpt/page_buffer.h"
#include "tierzero/checkpoint.h"
#include "tierzero/error.h"

namespace tierzero {
namespace {

namespace fs = std::filesystem;

// A fresh file path in the test's working folder (a disk filesystem, not tmpfs, under ctest).
std::string scratch(const std::string& name) {
  const fs::path p = fs::current_path() / ("checkpoint_file_test." + name);
  fs::remove(p);
  return p.string();
}

std::vector<char> read_back(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

PageBuffer<char> pattern(std::size_t bytes) {
  PageBuffer<char> b(bytes);
  for (std::size_t i = 0; i < bytes; ++i) b[i] = static_cast<char>(i * 131 + 7);
  return b;
}

// How many of the file's pages are in the page cache.
std::size_t resident_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  const std::size_t bytes = fs::file_size(path);
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  std::vector<unsigned char> in((bytes + kPageAlign - 1) / kPageAlign);
  ::mincore(map, bytes, in.data());
  ::munmap(map, bytes);
  std::size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

TEST(WriteFileSynced, EverySizeAndAlignmentComesBackByteForByte) {
  for (std::size_t bytes : {0ul, 1ul, 4095ul, 4096ul, 4097ul, 3 * 4096ul + 17, 1ul << 20}) {
    const PageBuffer<char> data = pattern(bytes + 1);
    for (std::size_t offset : {0ul, 1ul}) {  // page-aligned, then not
      const std::string path = scratch("roundtrip");
      write_file_synced(path, data.data() + offset, bytes);
      const std::vector<char> back = read_back(path);
      ASSERT_EQ(back.size(), bytes) << bytes << " bytes at offset " << offset;
      EXPECT_TRUE(std::equal(back.begin(), back.end(), data.begin() + static_cast<std::ptrdiff_t>(offset)))
          << bytes << " bytes at offset " << offset;
      fs::remove(path);
    }
  }
}

TEST(WriteFileSynced, PageAlignedDataSkipsThePageCache) {
  const std::string probe = scratch("probe");
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_DIRECT, 0644);
  if (fd < 0) GTEST_SKIP() << "this filesystem refuses O_DIRECT (" << fs::current_path() << "): the ordinary path is taken";
  ::close(fd);
  fs::remove(probe);
  const std::size_t pages = 64, bytes = pages * kPageAlign + 100;  // 64 whole pages and a tail
  const PageBuffer<char> data = pattern(bytes);
  PageBuffer<char> shifted(bytes + 1);  // the same bytes one past a page boundary
  std::copy(data.begin(), data.end(), shifted.begin() + 1);
  const std::string direct = scratch("direct"), cached = scratch("cached");
  write_file_synced(direct, data.data(), bytes);
  write_file_synced(cached, shifted.data() + 1, bytes);  // unaligned: through the page cache
  EXPECT_LE(resident_pages(direct), 1u);              // at most the tail's page
  EXPECT_EQ(resident_pages(cached), pages + 1);
  EXPECT_EQ(read_back(direct), read_back(cached));
  fs::remove(direct);
  fs::remove(cached);
}

TEST(WriteFileSynced, AnUnwritablePathIsAFormatErrorNamingIt) {
  const PageBuffer<char> data = pattern(8192);
  try {
    write_file_synced("/nonexistent-dir/x", data.data(), data.size());
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("/nonexistent-dir/x"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace tierzero
