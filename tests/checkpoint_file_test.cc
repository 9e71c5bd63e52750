// A checkpoint's files (tierzero/checkpoint.h). write_file_synced: every
// size and alignment comes back byte for byte, and page-aligned data
// (ckpt/page_buffer.h) bypasses the page cache (O_DIRECT) up to its last
// whole page, which mincore() sees as pages of the file that are not
// resident after the write. The names meta.json and `latest` give: only a
// file in the checkpoint's folder and a step folder beside `latest`;
// anything leading elsewhere is a FormatError naming the file and the name
// before any file is opened.
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
#include "tierzero/plan.h"

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

// meta.json as a save writes it, with `name` as its one shard's name.
std::string meta_naming(const std::string& name) {
  CheckpointMeta m;
  m.plan = strategy_plan("zero3");
  m.topology = "world=1";
  m.files = {{name, 4, 0}};
  return m.to_json();
}

TEST(CheckpointMeta, RefusesFileNamesThatLeaveTheFolder) {
  EXPECT_EQ(CheckpointMeta::from_json(meta_naming("rank-00000.params"), "meta.json").files.at(0).name, "rank-00000.params");
  for (const std::string bad : {"../../secret.txt", "/etc/passwd", "sub/rank-00000.params", "..", ".", "", "a\\b"}) {
    try {
      CheckpointMeta::from_json(meta_naming(bad), "ck/step-00000001/meta.json");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const FormatError& e) {
      EXPECT_NE(e.message().find("ck/step-00000001/meta.json: file name '" + bad + "' leaves the checkpoint's folder"), std::string::npos)
          << e.message();
    }
  }
}

// A checkpoint whose meta.json names ../secret.txt: the reader refuses it at
// once, so verify() never opens (nor reports the checksum of) the file outside.
TEST(CheckpointMeta, TheReaderRefusesItBeforeOpeningAnything) {
  const fs::path save = scratch("escape");
  fs::remove_all(save);
  fs::create_directories(save / "step-00000001");
  std::ofstream(save / "secret.txt") << "abcd";
  std::ofstream(save / "step-00000001" / "meta.json") << meta_naming("../secret.txt");
  std::ofstream(save / "latest") << "step-00000001\n";
  try {
    CheckpointReader r(save.string());
    ADD_FAILURE() << "read a checkpoint naming ../secret.txt";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("meta.json: file name '../secret.txt' leaves the checkpoint's folder"), std::string::npos) << e.message();
  }
  fs::remove_all(save);
}

TEST(ResolveCheckpoint, LatestNamesOnlyAStepFolderBesideIt) {
  const fs::path save = scratch("latest");
  fs::remove_all(save);
  fs::create_directories(save / "step-00000005");
  std::ofstream(save / "step-00000005" / "meta.json") << "{}";
  fs::create_directories(save / "elsewhere");
  std::ofstream(save / "elsewhere" / "meta.json") << "{}";
  std::ofstream(save / "latest") << "step-00000005\n";
  EXPECT_EQ(resolve_checkpoint(save.string()), (save / "step-00000005").string());
  for (const std::string& bad : std::vector<std::string>{"../" + save.filename().string() + "/step-00000005", "elsewhere",
                                                         (save / "step-00000005").string(), "step-00000005/.", "step-", "step-5x", ""}) {
    std::ofstream(save / "latest") << bad << "\n";
    try {
      resolve_checkpoint(save.string());
      ADD_FAILURE() << "followed latest = '" << bad << "'";
    } catch (const FormatError& e) {
      EXPECT_NE(e.message().find("latest' names '" + bad + "', which is not a step folder beside it"), std::string::npos) << e.message();
    }
  }
  std::ofstream(save / "latest") << "step-00000006\n";  // well formed, but no such checkpoint
  EXPECT_THROW(resolve_checkpoint(save.string()), FormatError);
  fs::remove_all(save);
}

}  // namespace
}  // namespace tierzero
