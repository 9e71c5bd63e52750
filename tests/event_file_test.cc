// TensorBoard's TFRecord framing (tools/tierzero/event_file.h): CRC-32C
// against the standard check value and a bitwise reference, records read
// back whole, a file cut at any byte gives the records before the cut, and
// a changed byte is found by a CRC.
#include <gtest/gtest.h>

#include <string>

#include "event_file.h"
#include "tierzero/error.h"

namespace tierzero::cli {
namespace {

// CRC-32C bit by bit (reflected polynomial 0x82f63b78), as RFC 3720 defines it.
std::uint32_t reference_crc32c(const std::string& s) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return ~c;
}

TEST(EventFile, Crc32cIsCastagnolis) {
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u);  // the CRC catalogue's check value for CRC-32C
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8a9136aau);  // RFC 3720 B.4: 32 bytes of zeros
  std::string text;
  for (int i = 0; i < 1000; ++i) text.push_back(static_cast<char>(i * 7 + 3));
  for (std::size_t n : {0u, 1u, 7u, 8u, 63u, 64u, 999u, 1000u}) EXPECT_EQ(crc32c(text.substr(0, n)), reference_crc32c(text.substr(0, n))) << n;
  const std::uint32_t c = reference_crc32c(text);
  EXPECT_EQ(masked_crc32c(text), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(EventFile, RecordsReadBackAndACutFileKeepsItsWholeRecords) {
  const std::vector<std::string> records = {"", "a", std::string(300, 'x'), "brain.Event:2", std::string(5, '\0')};
  std::string file;
  std::vector<std::size_t> ends;
  for (const std::string& r : records) {
    append_record(file, r);
    ends.push_back(file.size());
  }
  EXPECT_EQ(file.size(), 5 * 16 + 1 + 300 + 13 + 5);  // 12 bytes before each record, 4 after
  EXPECT_EQ(file.substr(0, 8), std::string(8, '\0'));  // the empty record's length, little-endian
  const RecordScan all = read_records(file, "f");
  EXPECT_EQ(all.records, records);
  EXPECT_EQ(all.torn_bytes, 0u);
  for (std::size_t cut = 0; cut <= file.size(); ++cut) {
    const RecordScan scan = read_records(std::string_view(file).substr(0, cut), "f");
    std::size_t whole = 0;
    while (whole < ends.size() && ends[whole] <= cut) ++whole;
    ASSERT_EQ(scan.records.size(), whole) << "cut at " << cut;
    EXPECT_EQ(scan.torn_bytes, cut - (whole ? ends[whole - 1] : 0)) << "cut at " << cut;
  }
}

TEST(EventFile, AChangedByteFailsACrc) {
  std::string file;
  append_record(file, "first");
  append_record(file, "second record");
  for (std::size_t at = 0; at < file.size(); ++at) {
    std::string bad = file;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    std::string message;
    try {
      read_records(bad, "events.out.tfevents.1");
    } catch (const FormatError& e) {
      message = e.message();
    }
    const std::size_t start = at < 21 ? 0 : 21;  // the records start at bytes 0 and 21 (12 + 5 + 4)
    const bool header = at - start < 12;           // the length and its CRC
    const std::string want = std::string("events.out.tfevents.1: the ") + (header ? "length of the " : "") + "record at byte " +
                             std::to_string(start) + " fails its CRC-32C";
    EXPECT_EQ(message, want) << "byte " << at;
  }
}

}  // namespace
}  // namespace tierzero::cli
