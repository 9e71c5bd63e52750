// Token files, the built-in corpus, the tokenizer and the sampler.
#include "tierzero/data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "tierzero/error.h"

namespace tierzero {
namespace {

std::string temp_path(const char* name) { return testing::TempDir() + "tz_" + std::to_string(getpid()) + "_" + name; }

void expect_format_error(const std::string& path, const char* fragment) {
  try {
    TokenData::open(path);
    FAIL() << path << " was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find(fragment), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(path), std::string::npos) << "the message names the file: " << e.message();
  }
}

TEST(TokenFile, RoundTripUint16AndUint32) {
  const std::string p16 = temp_path("a.bin"), p32 = temp_path("b.bin");
  write_token_file(p16, {1, 2, 300, 255}, 512);
  write_token_file(p32, {1, 70000, 3}, 100000);
  const TokenData a = TokenData::open(p16), b = TokenData::open(p32);
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(a[2], 300u);
  EXPECT_EQ(a.vocab(), 512u);
  EXPECT_EQ(b[1], 70000u);
  std::ifstream in(p16, std::ios::binary | std::ios::ate);
  EXPECT_EQ(static_cast<std::size_t>(in.tellg()), 32u + 4 * 2) << "uint16 storage";
  std::remove(p16.c_str());
  std::remove(p32.c_str());
}

TEST(TokenFile, BadFilesAreClearErrors) {
  const std::string p = temp_path("bad.bin");
  expect_format_error(temp_path("missing.bin"), "cannot open");
  write_token_file(p, {1, 2, 3, 4}, 256);
  {  // wrong magic
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.write("GARBAGE!", 8);
  }
  expect_format_error(p, "bad magic");
  write_token_file(p, {1, 2, 3, 4}, 256);
  {  // wrong dtype
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12);
    const std::uint32_t three = 3;
    f.write(reinterpret_cast<const char*>(&three), 4);
  }
  expect_format_error(p, "bad token dtype");
  write_token_file(p, {1, 2, 3, 4}, 256);
  truncate(p.c_str(), 32 + 5);
  expect_format_error(p, "truncated");
  truncate(p.c_str(), 10);
  expect_format_error(p, "truncated");
  write_token_file(p, {1, 2, 3, 4}, 256);
  {  // id >= vocab
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(32 + 2 * 2);
    const std::uint16_t big = 999;
    f.write(reinterpret_cast<const char*>(&big), 2);
  }
  expect_format_error(p, "token 2 has id 999");
  std::remove(p.c_str());
  EXPECT_THROW(write_token_file(p, {1, 300}, 256), FormatError);
  EXPECT_FALSE(std::ifstream(p)) << "nothing written on error";
}

// A count whose size in bytes wraps around 2^64 (here to exactly the bytes
// present) must not pass for a whole file: it would be read far past its end.
TEST(TokenFile, AHugeCountDoesNotWrapAround) {
  TokenFileHeader h{};
  std::memcpy(h.magic, "TZTOKENS", 8);
  h.version = 1, h.token_bytes = 2, h.count = (std::uint64_t{1} << 63) + 3, h.vocab = 256;
  std::vector<unsigned char> file(sizeof h + 6, 0);
  std::memcpy(file.data(), &h, sizeof h);
  try {
    check_token_file(file.data(), file.size(), "wrap.bin");
    FAIL() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("wrap.bin: truncated: header says 9223372036854775811 tokens"), std::string::npos) << e.message();
  }
}

// An llm.c / nanoGPT shard: 256 int32 of header (magic 20240520, version,
// count), then uint16 (version 1) or uint32 (version 2) ids.
std::string llmc_shard(std::int32_t version, const std::vector<std::uint32_t>& ids, std::int32_t count) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = 20240520, header[1] = version, header[2] = count;
  std::string f(reinterpret_cast<const char*>(header.data()), 1024);
  for (std::uint32_t id : ids) {
    if (version == 1) {
      const std::uint16_t v = static_cast<std::uint16_t>(id);
      f.append(reinterpret_cast<const char*>(&v), 2);
    } else {
      f.append(reinterpret_cast<const char*>(&id), 4);
    }
  }
  return f;
}

TEST(TokenFile, ReadsLlmcAndNanoGptShards) {
  const std::string p = temp_path("llmc.bin");
  std::ofstream(p, std::ios::binary) << llmc_shard(1, {50256, 15496, 11, 995}, 4);
  const TokenData d = TokenData::open(p);
  EXPECT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0], 50256u);
  EXPECT_EQ(d[3], 995u);
  EXPECT_EQ(d.vocab(), 50257u);  // the shard records none: the largest id + 1
  std::ofstream(p, std::ios::binary) << llmc_shard(2, {128000, 7}, 2);
  EXPECT_EQ(TokenData::open(p)[0], 128000u);
  std::ofstream(p, std::ios::binary) << llmc_shard(1, {1, 2, 3}, 4);
  expect_format_error(p, "truncated: header says 4 tokens of 2 bytes");
  std::ofstream(p, std::ios::binary) << llmc_shard(3, {1, 2}, 2);
  expect_format_error(p, "llm.c shard version 3 (expected 1 for uint16 ids or 2 for uint32)");
  std::remove(p.c_str());
}

// A Megatron-LM indexed dataset laid out byte by byte as its
// IndexedDatasetBuilder writes it: documents of `docs` ids each.
void write_megatron(const std::string& prefix, const std::vector<std::vector<std::uint32_t>>& docs, std::uint8_t code) {
  const std::size_t tb = code == 8 ? 2 : 4;
  std::string bin, idx("MMIDIDX\0\0", 9);
  auto put = [&idx](auto v) { idx.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(std::uint64_t{1});
  put(code);
  put(std::uint64_t{docs.size()});
  put(std::uint64_t{docs.size() + 1});
  for (const auto& d : docs) put(static_cast<std::int32_t>(d.size()));
  std::int64_t pointer = 0;
  for (const auto& d : docs) put(pointer), pointer += static_cast<std::int64_t>(d.size() * tb);
  for (std::size_t i = 0; i <= docs.size(); ++i) put(static_cast<std::int64_t>(i));
  for (const auto& d : docs)
    for (std::uint32_t id : d) bin.append(reinterpret_cast<const char*>(&id), tb);  // little-endian: the low bytes
  std::ofstream(prefix + ".bin", std::ios::binary) << bin;
  std::ofstream(prefix + ".idx", std::ios::binary) << idx;
}

TEST(TokenFile, ReadsMegatronIndexedDatasets) {
  const std::string prefix = temp_path("megatron");
  write_megatron(prefix, {{50256, 15496, 995}, {11, 50256}}, 8);
  for (const std::string& spec : {prefix, prefix + ".bin", prefix + ".idx"}) {
    const TokenData d = TokenData::open(spec);
    ASSERT_EQ(d.size(), 5u) << spec;  // documents back to back, as Megatron's GPT dataset reads them
    EXPECT_EQ(d[1], 15496u);
    EXPECT_EQ(d[3], 11u);
    EXPECT_EQ(d.vocab(), 50257u);
  }
  write_megatron(prefix, {{128000, 7}}, 4);  // int32 ids
  EXPECT_EQ(TokenData::open(prefix)[0], 128000u);
  // Bad datasets: named, exit-2 errors.
  write_megatron(prefix, {{1, 2, 3}}, 8);
  std::ofstream(prefix + ".bin", std::ios::binary) << std::string(4, '\0');  // one id short
  expect_format_error(prefix, "does not match its .bin: the index covers 3 tokens (6 bytes) but the .bin has 4 bytes");
  write_megatron(prefix, {{1, 2, 3}}, 5);  // int64
  expect_format_error(prefix, "token dtype code 5 (int64) is not a token type tierzero reads");
  write_megatron(prefix, {{1, 2}, {3}}, 8);
  std::string idx;
  {
    std::ifstream in(prefix + ".idx", std::ios::binary);
    idx.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(prefix + ".idx", std::ios::binary) << idx.substr(0, idx.size() - 5);
  expect_format_error(prefix, "truncated: 2 sequences and 3 documents need more than its");
  idx[34 + 8 + 8] = 9;  // the second sequence's byte pointer
  std::ofstream(prefix + ".idx", std::ios::binary) << idx;
  expect_format_error(prefix, "sequence 1 (length 1, byte 9) does not follow the one before it");
  std::ofstream(prefix + ".idx", std::ios::binary) << "MMIDIDY";
  expect_format_error(prefix, "not a Megatron index (no MMIDIDX header)");
  std::remove((prefix + ".idx").c_str());
  std::remove((prefix + ".bin").c_str());
  expect_format_error(prefix, "cannot open");
}

TEST(BuiltinCorpus, IsAtLeastAMegabyteOfEnglish) {
  const TokenData d = TokenData::builtin();
  EXPECT_GT(d.size(), 1'000'000u);
  EXPECT_EQ(d.vocab(), 256u);
  std::vector<std::uint32_t> head;
  for (int i = 0; i < 16; ++i) head.push_back(d[i]);
  EXPECT_EQ(byte_decode(head), "In the beginning");
}

TEST(Tokenizer, BytesRoundTrip) {
  const std::string s = "caf\xc3\xa9 \x01\xff";
  const auto ids = byte_encode(s);
  EXPECT_EQ(ids.size(), s.size());
  EXPECT_EQ(ids[3], 0xc3u);
  EXPECT_EQ(byte_decode(ids), s);
}

TEST(BatchSampler, PureFunctionOfSeedStepMicroAndIndex) {
  const TokenData d = TokenData::builtin();
  BatchSampler s(d, 16, 7), other_seed(d, 16, 8);
  std::vector<int> a(4 * 16), at(4 * 16), b(2 * 16), bt(2 * 16), c(2 * 16), ct(2 * 16);
  s.fill(5, 1, 0, 4, a.data(), at.data());
  // Two "ranks" with micro-batch 2 see exactly the samples of one with 4.
  s.fill(5, 1, 0, 2, b.data(), bt.data());
  s.fill(5, 1, 2, 2, c.data(), ct.data());
  EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin()));
  EXPECT_TRUE(std::equal(c.begin(), c.end(), a.begin() + 32));
  EXPECT_NE(b, c) << "ranks see distinct data";
  for (int i = 0; i < 15; ++i) EXPECT_EQ(at[i], a[i + 1]) << "targets are the next tokens";
  std::vector<int> again(4 * 16), again_t(4 * 16), other(4 * 16), other_t(4 * 16);
  s.fill(5, 1, 0, 4, again.data(), again_t.data());
  EXPECT_EQ(a, again);
  s.fill(6, 1, 0, 4, other.data(), other_t.data());
  EXPECT_NE(a, other) << "steps differ";
  other_seed.fill(5, 1, 0, 4, other.data(), other_t.data());
  EXPECT_NE(a, other) << "seeds differ";
  EXPECT_THROW(BatchSampler(TokenData::from_tokens({1, 2, 3}, 256, "tiny"), 16, 1), FormatError);
}

}  // namespace
}  // namespace tierzero
