// TensorBoard's event files are TFRecord files: each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes |
//   length bytes of data          | uint32 masked CRC-32C of the data
// (tensorflow/core/lib/io/record_writer.cc; the mask rotates the CRC right
// by 15 bits and adds 0xa282ead8, so that CRCs of data holding CRCs stay
// strong). Pure functions of their arguments; any thread.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tierzero::cli {

// CRC-32C (Castagnoli, as iSCSI: Intel ISA-L's crc32_iscsi) of `data`.
std::uint32_t crc32c(std::string_view data);
// crc32c masked as TFRecord stores it.
std::uint32_t masked_crc32c(std::string_view data);

// Appends one framed record holding `data` to `out`.
void append_record(std::string& out, std::string_view data);

// The records of an event file's bytes, in order, every CRC checked. A
// last record cut short (the writer killed mid-write) is left out and its
// bytes counted in `torn_bytes`; a CRC that does not match throws
// FormatError naming `origin` and the record's offset.
struct RecordScan {
  std::vector<std::string> records;
  std::size_t torn_bytes = 0;
};
RecordScan read_records(std::string_view bytes, const std::string& origin);

}  // namespace tierzero::cli
