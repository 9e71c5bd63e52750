// The device figures of a system file (docs/formats.md, "System files"):
// memory_gb, peak_tflops, memory_bandwidth_gbs at the top level and the
// [device] table (tierzero/device.h), each key optionally followed by
// KEY_source, the figure's source. Shared by system files and the device
// presets (data/devices/*.toml).
#pragma once
#include <string>
#include <toml++/toml.h>

#include "tierzero/system.h"

namespace tierzero {

// Reads the device keys of `root` into `s`; throws ConfigError naming the
// key. Unknown keys inside [device] are errors; the caller checks the top level.
void read_device_keys(const toml::table& root, System& s, const std::string& origin);
// The top-level keys read_device_keys takes (the caller's reject_unknown list).
const std::vector<std::string>& device_top_keys();
// Reads the keys of a [device] table into `d` (over its current figures).
void read_device_table(const toml::table& t, DeviceSpec& d, const std::string& where);
// Writes what read_device_keys reads.
void write_device_keys(toml::table& root, const System& s);

}  // namespace tierzero
