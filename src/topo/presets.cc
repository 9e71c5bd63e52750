// Built-in systems. Figures are per rank and per direction.
#include "tierzero/system.h"

#include <utility>

#include "topo/measured_presets.h"

namespace tierzero {

namespace {
constexpr double kGB = 1e9;
constexpr double kUs = 1e-6;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

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

// A system with the defaults of everything but its links, memory and rates.
System make_system(std::string name, std::vector<LinkSpec> links, double memory_bytes, double peak_flops,
              double memory_bandwidth_Bps) {
  System s;
  s.name = std::move(name);
  s.links = std::move(links);
  s.memory_bytes = memory_bytes;
  s.peak_flops = peak_flops;
  s.memory_bandwidth_Bps = memory_bandwidth_Bps;
  return s;
}

System frontier() {
  // OLCF Frontier User Guide, "System Overview" / "Node AMD GPUs": each node has
  // 4 MI250X (8 GCDs, 64 GB HBM2e each); the two GCDs of one MI250X are joined
  // by 4 Infinity Fabric links of 50 GB/s per direction (200 GB/s); GCDs on
  // different MI250X by 1-2 such links (50-100 GB/s; the ring uses the slowest,
  // 50); 4 HPE Slingshot NICs of 25 GB/s per node, i.e. 12.5 GB/s per GCD.
  // Peak: AMD MI250X datasheet, 383 TFLOP/s bf16 per package = 191.5 per GCD.
  // Latencies: typical MPI/RCCL small-message latencies for these links
  // (assumed; `tierzero bench comm --write-system` measures real ones).
  // Achievable fraction of peak: 38.38%, the GPU throughput Dash et al.
  // measured for a 22B GPT on Frontier ("Optimizing Distributed Training on
  // Frontier for Large Language Models", ISC 2024, arXiv:2312.12705).
  System s = make_system("frontier",
                    {link(Level::package, 2, 200 * kGB, 2 * kUs, "OLCF Frontier User Guide: 4 IF links x 50 GB/s between the GCDs of one MI250X"),
                     link(Level::node, 4, 50 * kGB, 4 * kUs, "OLCF Frontier User Guide: 1-2 IF links x 50 GB/s between MI250X in a node"),
                     link(Level::world, 0, 12.5 * kGB, 10 * kUs, "OLCF Frontier User Guide: 4 Slingshot NICs x 25 GB/s per 8 GCDs")},
                    64 * kGB,
                    191.5e12,
                    1.6e12);  // AMD MI250X datasheet: 3.2 TB/s HBM2e per package
  s.compute_efficiency = 0.3838;
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

System dgx(const char* name, double nvlink_gbs, double ib_gbs, double peak, double hbm, HostSide host) {
  // NVIDIA DGX A100 / DGX H100 datasheets: 8 GPUs per node with 80 GB; NVLink
  // 600 (A100) / 900 (H100) GB/s bidirectional per GPU; one 200 (A100) / 400
  // (H100) Gb/s InfiniBand adapter per GPU. Peak dense bf16: 312 / 989 TFLOP/s.
  // HBM bandwidth: 2.0 TB/s (A100 80GB SXM) / 3.35 TB/s (H100 SXM).
  System s = make_system(name,
                {link(Level::node, 8, nvlink_gbs * kGB, 3 * kUs, "NVIDIA DGX datasheet: NVLink bandwidth per GPU, per direction"),
                 link(Level::world, 0, ib_gbs * kGB, 8 * kUs, "NVIDIA DGX datasheet: one InfiniBand adapter per GPU")},
                80 * kGB,
                peak,
                hbm);
  s.host_link_Bps = host.link_gbs * kGB, s.host_memory_Bps = host.memory_gbs * kGB, s.nvme_Bps = host.nvme_gbs * kGB;
  return s;
}

System dgx2(const char* name, int ib_links) {
  // The ZeRO++ paper's cluster (Wang et al. 2023, arXiv:2306.10209, section
  // 6: 24 NVIDIA DGX-2 nodes, 384 V100, 100 Gb/s InfiniBand, 1 or 4 links per
  // node). NVIDIA DGX-2 datasheet: 16 V100 SXM3 32 GB joined by NVSwitch,
  // 300 GB/s of NVLink per GPU (150 per direction). V100 datasheet: 125
  // TFLOP/s fp16 tensor peak, 900 GB/s HBM2. compute_efficiency 0.30: the
  // ZeRO paper's 15 PFLOP/s on 400 V100 (Rajbhandari et al., SC'20), 37.5
  // TFLOP/s per GPU. World: the node's links shared by 16 GPUs at 60% of
  // their 12.5 GB/s line rate, the achieved NCCL rate across 24 nodes that
  // reproduces the paper's ZeRO++/ZeRO-3 ratios with DeepSpeed's engine model
  // (an inverse analysis, docs/simulator.md: no published measurement of it
  // was found). Latencies assumed, as for the DGX presets.
  const double world = ib_links * 12.5 * 0.6 / 16;
  System s = make_system(name,
                    {link(Level::node, 16, 150 * kGB, 3 * kUs, "NVIDIA DGX-2 datasheet: 300 GB/s NVLink per GPU through NVSwitch"),
                     link(Level::world, 0, world * kGB, 8 * kUs,
                          std::to_string(ib_links) + " x 100 Gb/s InfiniBand per node / 16 GPUs, at 60% of line rate (inferred, docs/simulator.md)")},
                    32 * kGB,
                    125e12,
                    900 * kGB);
  s.compute_efficiency = 0.30;
  return s;
}

System cpu() {
  // A generic CPU cluster: shared-memory MPI inside a node and 10 GbE between
  // nodes. Node figures measured on the project's 2-vCPU development machine
  // with Open MPI 4.1 (2 ranks, ~10 GB/s all-gather); 10 GbE is
  // 1.25 GB/s line rate; sgemm peak ~90 GFLOP/s per core (OpenBLAS 0.3.21).
  // Replace with `tierzero bench comm --write-system` on the real cluster.
  // Collectives: tierzero's MPI communicator (Open MPI's libnbc), direct.
  System s = make_system("cpu",
                    {link(Level::node, 0, 10 * kGB, 5 * kUs, "measured: Open MPI vader, 2 ranks, this project's dev machine"),
                     link(Level::world, 0, 1.25 * kGB, 30 * kUs, "10 GbE line rate")},
                    16 * kGiB,
                    90e9,
                    14.5e9);  // memcpy bandwidth measured on the development machine
  s.collectives = CollectiveLibrary::mpi;
  // The optimizer offloaded: the same memory (nothing crosses a link), updated at the memcpy rate; NVMe: dd with
  // O_DIRECT in 4 MiB blocks on the development machine's disk, 673 MB/s written and 1.1 GB/s read (harmonic mean).
  s.host_memory_Bps = 14.5e9, s.nvme_Bps = 2.0 / (1 / 0.673 + 1 / 1.1) * kGB;
  return s;
}
}  // namespace

std::vector<std::string> system_preset_names() {
  std::vector<std::string> names = {"frontier"};
  for (const auto& [name, text] : measured_system_texts()) names.emplace_back(name);
  for (const char* n : {"dgx-a100", "dgx-h100", "dgx2-ib1", "dgx2-ib4", "cpu"}) names.emplace_back(n);
  return names;
}

std::optional<System> system_preset(std::string_view name) {
  if (name == "frontier") return frontier();
  // Host side per GPU: PCIe 4.0 / 5.0 x16 per direction (PCI-SIG: 16 / 32 GT/s x 16 lanes, 128b/130b: 31.5 / 63 GB/s);
  // host memory: two sockets of 8 DDR4-3200 channels (AMD EPYC 7742, A100) or 8 DDR5-4800 (Xeon 8480C, H100):
  // 409.6 / 614.4 GB/s over 8 GPUs; NVMe: the datasheets' 4 (A100) / 8 (H100) U.2 drives, taken at 3 GB/s each for as
  // many bytes read as written (an assumption: the datasheets give capacities, not rates).
  if (name == "dgx-a100") return dgx("dgx-a100", 300, 25, 312e12, 2.0e12, {31.5, 409.6 / 8, 4 * 3.0 / 8});
  if (name == "dgx-h100") return dgx("dgx-h100", 450, 50, 989e12, 3.35e12, {63, 614.4 / 8, 8 * 3.0 / 8});
  if (name == "dgx2-ib1") return dgx2("dgx2-ib1", 1);
  if (name == "dgx2-ib4") return dgx2("dgx2-ib4", 4);
  if (name == "cpu") return cpu();
  // Measured systems: data/systems/NAME.toml, compiled in.
  for (const auto& [measured, text] : measured_system_texts())
    if (name == measured) return parse_system_toml(text, "data/systems/" + std::string(measured) + ".toml");
  return std::nullopt;
}

}  // namespace tierzero
