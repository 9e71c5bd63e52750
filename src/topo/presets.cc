// Built-in systems. Figures are per rank and per direction; each device's
// compute figures come from data/devices/*.toml (with their sources), the
// measured systems from data/systems/*.toml, both compiled in.
#include "tierzero/system.h"

#include <utility>

#include "core/embedded_data.h"
#include "core/toml_read.h"
#include "topo/device_toml.h"

namespace tierzero {

namespace {
constexpr double kGB = 1e9;
constexpr double kUs = 1e-6;

// A link at its line rate (no achieved-rate table).
LinkSpec link(Level level, int fanout, double bandwidth_Bps, double latency_s, std::string source) {
  LinkSpec l;
  l.level = level;
  l.fanout = fanout;
  l.bandwidth_Bps = bandwidth_Bps;
  l.latency_s = latency_s;
  l.source = std::move(source);
  return l;
}

// A system of `device`'s figures and these links.
System make_system(std::string name, std::vector<LinkSpec> links, std::string_view device) {
  System s = device_preset(device);
  s.name = std::move(name);
  s.links = std::move(links);
  return s;
}

System frontier() {
  // OLCF Frontier User Guide, "System Overview" / "Node AMD GPUs": each node has
  // 4 MI250X (8 GCDs, 64 GB HBM2e each); the two GCDs of one MI250X are joined
  // by 4 Infinity Fabric links of 50 GB/s per direction (200 GB/s); GCDs on
  // different MI250X by 1-2 such links (50-100 GB/s; the ring uses the slowest,
  // 50); 4 HPE Slingshot NICs of 25 GB/s per node, i.e. 12.5 GB/s per GCD.
  // Latencies: typical MPI/RCCL small-message latencies for these links
  // (assumed; `tierzero bench comm --write-system` measures real ones).
  System s = make_system("frontier",
                    {link(Level::package, 2, 200 * kGB, 2 * kUs, "OLCF Frontier User Guide: 4 IF links x 50 GB/s between the GCDs of one MI250X"),
                     link(Level::node, 4, 50 * kGB, 4 * kUs, "OLCF Frontier User Guide: 1-2 IF links x 50 GB/s between MI250X in a node"),
                     link(Level::world, 0, 12.5 * kGB, 10 * kUs, "OLCF Frontier User Guide: 4 Slingshot NICs x 25 GB/s per 8 GCDs")},
                    "mi250x-gcd");
  // OLCF Frontier User Guide: each GCD reaches the CPU at 36 GB/s per direction (Infinity Fabric); 205 GB/s of DDR4 per
  // node over 8 GCDs; 2 node-local NVMe drives of 8 GB/s read and 4 GB/s write in all, over 8 GCDs: 1 and 0.5 GB/s per
  // GCD, 0.67 GB/s for as many bytes read as written (the harmonic mean).
  s.host_link_Bps = 36 * kGB, s.host_memory_Bps = 205.0 / 8 * kGB, s.nvme_Bps = 2.0 / (1 / 1.0 + 1 / 0.5) * kGB;
  return s;
}

// Offload figures of a DGX, per GPU (host_link_Bps, host_memory_Bps, nvme_Bps of System).
struct HostSide {
  double link_gbs, memory_gbs, nvme_gbs;
};

System dgx(const char* name, std::string_view device, double nvlink_gbs, double ib_gbs, HostSide host) {
  // NVIDIA DGX A100 / DGX H100 / DGX H200 datasheets: 8 GPUs per node; NVLink
  // 600 (A100) / 900 (H100, H200) GB/s bidirectional per GPU; one 200 (A100)
  // / 400 (H100, H200) Gb/s InfiniBand adapter per GPU.
  System s = make_system(name,
                {link(Level::node, 8, nvlink_gbs * kGB, 3 * kUs, "NVIDIA DGX datasheet: NVLink bandwidth per GPU, per direction"),
                 link(Level::world, 0, ib_gbs * kGB, 8 * kUs, "NVIDIA DGX datasheet: one InfiniBand adapter per GPU")},
                device);
  s.host_link_Bps = host.link_gbs * kGB, s.host_memory_Bps = host.memory_gbs * kGB, s.nvme_Bps = host.nvme_gbs * kGB;
  return s;
}

System gh200() {
  // CSCS Alps (eth-cscs/cscs-docs docs/alps/hardware.md): four GH200 modules and four Slingshot-11 NICs (200 Gb/s, 25
  // GB/s per direction) per node. NVLink 4: 18 links of 25 GB/s per direction per Hopper (NVIDIA H100 datasheet), split
  // over its three peers in a four-GPU node, 150 GB/s to each (inferred). Host: NVLink-C2C, 450 GB/s per direction
  // (NVIDIA GH200 datasheet); LPDDR5X 500 GB/s (Grace datasheet).
  System s = make_system("gh200",
                         {link(Level::node, 4, 150 * kGB, 3 * kUs, "NVLink 4 between the node's 4 GH200: 6 links x 25 GB/s per pair (inferred)"),
                          link(Level::world, 0, 25 * kGB, 8 * kUs, "CSCS Alps: one Slingshot-11 NIC (200 Gb/s) per GH200")},
                         "gh200");
  s.host_link_Bps = 450 * kGB, s.host_memory_Bps = 500 * kGB;
  return s;
}

System dgx2(const char* name, int ib_links) {
  // The ZeRO++ paper's cluster (Wang et al. 2023, arXiv:2306.10209, section
  // 6: 24 NVIDIA DGX-2 nodes, 384 V100, 100 Gb/s InfiniBand, 1 or 4 links per
  // node). NVIDIA DGX-2 datasheet: 16 V100 SXM3 32 GB joined by NVSwitch,
  // 300 GB/s of NVLink per GPU (150 per direction). World: the node's links
  // shared by its 16 GPUs, each at NCCL's achieved 12.2 GB/s of a 100 Gb/s
  // link ("as good as you can get", NVIDIA, NVIDIA/nccl-tests#29).
  // Latencies assumed, as for the DGX presets.
  const double world = ib_links * 12.2 / 16;
  return make_system(name,
                    {link(Level::node, 16, 150 * kGB, 3 * kUs, "NVIDIA DGX-2 datasheet: 300 GB/s NVLink per GPU through NVSwitch"),
                     link(Level::world, 0, world * kGB, 8 * kUs,
                          std::to_string(ib_links) + " x 100 Gb/s InfiniBand per node / 16 GPUs at NCCL's achieved 12.2 GB/s (NVIDIA/nccl-tests#29)")},
                    "v100-sxm");
}

System cpu() {
  // A generic CPU cluster: shared-memory MPI inside a node (between the ranks
  // of one package, a socket, and between packages alike) and 10 GbE between
  // nodes. The shared-memory figures measured on the project's 2-vCPU
  // development machine with Open MPI 4.1 (2 ranks, ~10 GB/s all-gather);
  // 10 GbE is 1.25 GB/s line rate; the rank's compute figures in
  // data/devices/cpu.toml. Replace with `tierzero bench comm --write-system`
  // on the real cluster. Collectives: tierzero's MPI communicator (Open MPI's
  // libnbc), direct. The fan-outs are the job's (--topology).
  const char* shared = "measured: Open MPI vader (shared memory), 2 ranks, this project's dev machine";
  System s = make_system("cpu",
                    {link(Level::package, 0, 10 * kGB, 5 * kUs, shared), link(Level::node, 0, 10 * kGB, 5 * kUs, shared),
                     link(Level::world, 0, 1.25 * kGB, 30 * kUs, "10 GbE line rate")},
                    "cpu");
  s.collectives = CollectiveLibrary::mpi;
  // The optimizer offloaded: the same memory (nothing crosses a link), updated at the memcpy rate; NVMe: dd with
  // O_DIRECT in 4 MiB blocks on the development machine's disk, 673 MB/s written and 1.1 GB/s read (harmonic mean).
  s.host_memory_Bps = 14.5e9, s.nvme_Bps = 2.0 / (1 / 0.673 + 1 / 1.1) * kGB;
  return s;
}
}  // namespace

std::vector<std::string> device_preset_names() { return embedded_names("devices"); }

System device_preset(std::string_view name) {
  if (const auto text = embedded_text("devices", name)) {
    const std::string origin = "data/devices/" + std::string(name) + ".toml";
    const toml::table root = parse_toml(*text, origin);
    System s;
    if (const auto base = root["based_on"].value<std::string>()) {
      TZ_CHECK(*base != name, ConfigError, origin + ": based_on names itself");
      s = device_preset(*base);
    }
    for (auto&& [k, v] : root) {
      bool known = k.str() == "based_on";
      for (const std::string& key : device_top_keys()) known = known || k.str() == key;
      TZ_CHECK(known, ConfigError, origin + ": unknown key '" + std::string(k.str()) + "'");
    }
    read_device_keys(root, s, origin);
    s.name = s.device.name = std::string(name);
    return s;
  }
  std::string names;
  for (const std::string& n : device_preset_names()) names += (names.empty() ? "" : ", ") + n;
  TZ_THROW(ConfigError, "unknown device '" + std::string(name) + "' (devices: " + names + ")");
}

std::vector<std::string> system_preset_names() {
  std::vector<std::string> names = {"frontier"};
  for (const std::string& n : embedded_names("systems")) names.push_back(n);
  for (const char* n : {"dgx-a100", "dgx-a100-40", "dgx-h100", "dgx-h200", "gh200", "dgx2-ib1", "dgx2-ib4", "cpu"}) names.emplace_back(n);
  return names;
}

std::optional<System> system_preset(std::string_view name) {
  if (name == "frontier") return frontier();
  // Host side per GPU: PCIe 4.0 / 5.0 x16 per direction (PCI-SIG: 16 / 32 GT/s x 16 lanes, 128b/130b: 31.5 / 63 GB/s);
  // host memory: two sockets of 8 DDR4-3200 channels (AMD EPYC 7742, A100) or 8 DDR5-4800 (Xeon 8480C, H100, H200):
  // 409.6 / 614.4 GB/s over 8 GPUs; NVMe: the datasheets' 4 (A100) / 8 (H100, H200) U.2 drives, taken at 3 GB/s each for
  // as many bytes read as written (an assumption: the datasheets give capacities, not rates).
  const HostSide a100_host{31.5, 409.6 / 8, 4 * 3.0 / 8}, h100_host{63, 614.4 / 8, 8 * 3.0 / 8};
  if (name == "dgx-a100") return dgx("dgx-a100", "a100-80gb", 300, 25, a100_host);
  if (name == "dgx-a100-40") return dgx("dgx-a100-40", "a100-40gb", 300, 25, a100_host);
  if (name == "dgx-h100") return dgx("dgx-h100", "h100-sxm", 450, 50, h100_host);
  if (name == "dgx-h200") return dgx("dgx-h200", "h200", 450, 50, h100_host);
  if (name == "gh200") return gh200();
  if (name == "dgx2-ib1") return dgx2("dgx2-ib1", 1);
  if (name == "dgx2-ib4") return dgx2("dgx2-ib4", 4);
  if (name == "cpu") return cpu();
  // Measured systems: data/systems/NAME.toml, compiled in.
  if (const auto text = embedded_text("systems", name)) return parse_system_toml(*text, "data/systems/" + std::string(name) + ".toml");
  return std::nullopt;
}

}  // namespace tierzero
