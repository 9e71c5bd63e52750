#include "tierzero/plan.h"

#include "tierzero/error.h"

namespace tierzero {

std::string partition_name(const Partition& p) { return p ? std::string(level_name(*p)) : "replicated"; }

Partition parse_partition(std::string_view s) {
  if (s == "replicated" || s == "none") return std::nullopt;
  return parse_level(s);
}

int partition_group_size(const Topology& topo, const Partition& p) {
  int g = 1;
  if (p)
    for (int l = 0; l <= static_cast<int>(*p); ++l) g *= topo.fanout(static_cast<Level>(l));
  return g;
}

std::string_view offload_name(Offload o) { return o == Offload::cpu ? "cpu" : o == Offload::nvme ? "nvme" : "none"; }

Offload parse_offload(std::string_view s) {
  for (Offload o : {Offload::none, Offload::cpu, Offload::nvme})
    if (s == offload_name(o)) return o;
  TZ_THROW(ConfigError, "unknown offload device '" + std::string(s) + "' (expected none, cpu or nvme)");
}

namespace {
int rank_of(const Partition& p) { return p ? static_cast<int>(*p) : -1; }
}  // namespace

void Plan::validate(const Topology& topo) const {
  const std::string where = "plan '" + name + "': ";
  for (const Partition* p : {&params, &bwd_params, &grads, &optim})
    TZ_CHECK(!*p || topo.declares(**p), ConfigError,
             where + "level " + partition_name(*p) + " is not in the topology " + topo.to_string());
  TZ_CHECK(rank_of(bwd_params) <= rank_of(params), ConfigError,
           where + "bwd_params (" + partition_name(bwd_params) + ") is partitioned wider than params (" + partition_name(params) + ")");
  TZ_CHECK(grads == optim, ConfigError,
           where + "grads (" + partition_name(grads) + ") and optim (" + partition_name(optim) + ") must be partitioned over the same level");
  TZ_CHECK(!params || params == optim, ConfigError,
           where + "params (" + partition_name(params) + ") must be replicated or partitioned like optim (" + partition_name(optim) + ")");
  TZ_CHECK(weight_bits == 16 || weight_bits == 8 || weight_bits == 4, ConfigError, where + "weight_bits must be 16, 8 or 4");
  TZ_CHECK(weight_bits == 16 || params, ConfigError, where + "quantised weights need partitioned params");
  for (int b : grad_bits.bits) TZ_CHECK(b == 16 || b == 8 || b == 4, ConfigError, where + "grad bits must be 16, 8 or 4");
  TZ_CHECK(!quantized() || grads, ConfigError, where + "quantised gradients need partitioned grads");
  TZ_CHECK(quant_block >= 1, ConfigError, where + "quant_block must be at least 1");
  TZ_CHECK(prefetch >= 0 && prefetch <= 8, ConfigError, where + "prefetch must be between 0 and 8");
  TZ_CHECK(optim_offload.device != Offload::nvme || !optim_offload.nvme_path.empty(), ConfigError,
           where + "the optimizer offloaded to nvme needs a directory (--nvme-path, DeepSpeed's offload_optimizer.nvme_path)");
  TZ_CHECK(optim_offload.buffers >= 2, ConfigError,
           where + "the optimizer's NVMe offload needs at least 2 buffers, got " + std::to_string(optim_offload.buffers));
  TZ_CHECK(!param_offload.offloaded() || params, ConfigError,
           where + "parameters can be offloaded only when they are partitioned (ZeRO stage 3: zero3, zeropp, mics, hier3), "
                   "as DeepSpeed's offload_param");
  TZ_CHECK(param_offload.device != Offload::nvme || !param_offload.nvme_path.empty(), ConfigError,
           where + "the parameters offloaded to nvme need a directory (--nvme-path, DeepSpeed's offload_param.nvme_path)");
  TZ_CHECK(param_offload.device != Offload::nvme || param_offload.buffers > prefetch, ConfigError,
           where + "the parameters' NVMe offload needs more buffers than units prefetched (" + std::to_string(prefetch) +
               "), got " + std::to_string(param_offload.buffers));
}

bool Plan::quantized() const {
  for (int b : grad_bits.bits)
    if (b != 16) return true;
  return false;
}

std::string Plan::describe() const {
  return name + " (params " + partition_name(params) + ", bwd_params " + partition_name(bwd_params) + ", grads " +
         partition_name(grads) + ", optim " + partition_name(optim) + ", weight bits " + std::to_string(weight_bits) +
         ", grad bits " + grad_bits.to_string() + ", gather " + std::string(decomposition_name(gather)) + ", reduce " +
         std::string(decomposition_name(reduce)) +
         (persist_threshold == 0 ? std::string() : ", units of <= " + std::to_string(persist_threshold) + " params whole") +
         (hop_chunk_bytes == 0 ? std::string() : ", hops pipelined in chunks of " + std::to_string(hop_chunk_bytes) + " bytes") +
         (optim_offload.offloaded() ? ", optim offload " + std::string(offload_name(optim_offload.device)) : std::string()) +
         (param_offload.offloaded() ? ", param offload " + std::string(offload_name(param_offload.device)) : std::string()) + ")";
}

bool Plan::same_sharding(const Plan& o) const {
  Plan a = *this, b = o;
  a.optim_offload = b.optim_offload = a.param_offload = b.param_offload = {};
  return a.describe() == b.describe();
}

Plan fit_to(const Plan& plan, const Topology& topo) {
  Plan p = plan;
  for (Partition* x : {&p.params, &p.bwd_params, &p.grads, &p.optim})
    while (*x && !topo.declares(**x)) *x = static_cast<Level>(static_cast<int>(**x) + 1);
  return p;
}

}  // namespace tierzero
