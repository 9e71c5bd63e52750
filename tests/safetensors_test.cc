// The safetensors reader (ckpt/safetensors.h) on files built in memory:
// a valid file, and shapes whose byte size is negative or wraps around
// 2^64 to the bytes present, which must be errors, not huge reads.
#include "ckpt/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tierzero/error.h"

namespace tierzero {
namespace {

// An 8-byte header length, the JSON header, then `data`.
std::string file_of(const std::string& header, const std::string& data) {
  std::string f(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(f.data(), &n, 8);
  return f + header + data;
}

std::string safetensors_error_of(const std::string& file) {
  try {
    parse_safetensors(file, "t.safetensors");
  } catch (const FormatError& e) {
    return e.message();
  }
  return "";
}

TEST(SafeTensors, ReadsTensorsAndMetadata) {
  const float v[3] = {1.5f, -2.0f, 3.25f};
  const SafeTensorsFile f = parse_safetensors(
      file_of(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}, "__metadata__": {"format": "pt"}})",
              std::string(reinterpret_cast<const char*>(v), 12)),
      "t.safetensors");
  EXPECT_EQ(f.at("w").as_f32(), (std::vector<float>{1.5f, -2.0f, 3.25f}));
  EXPECT_EQ(f.metadata.at("format"), "pt");
}

TEST(SafeTensors, NegativeOrWrappingShapesAreErrors) {
  // 2^62 x 4 F32 elements are 2^66 bytes: 0 modulo 2^64, the size of [0, 0].
  EXPECT_NE(safetensors_error_of(file_of(R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 0]}})", "")).find(
                "t.safetensors: tensor 'w' has a negative or too large shape"),
            std::string::npos);
  EXPECT_NE(safetensors_error_of(file_of(R"({"w": {"dtype": "F32", "shape": [-1, -4], "data_offsets": [0, 16]}})", std::string(16, 'x')))
                .find("negative or too large shape"),
            std::string::npos);
  EXPECT_NE(safetensors_error_of(file_of(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}})", "xx")).find("outside the file"),
            std::string::npos);
  EXPECT_NE(safetensors_error_of(std::string(5, '\0')).find("truncated"), std::string::npos);
}

}  // namespace
}  // namespace tierzero
