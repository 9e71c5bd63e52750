#include "tierzero/corpus_fit.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>

#include "tierzero/engine.h"
#include "tierzero/system.h"

namespace tierzero {

namespace {
// Each constant's bounds: efficiencies up to the best measured shape (docs/simulator.md lists them: 0.869 of the A100's
// peak, 0.803 of the H100's, 0.709 of its FP8 peak), the others over the range their keys allow.
struct Bounds {
  double low, high;
};
const std::map<std::string, Bounds>& bounds() {
  static const std::map<std::string, Bounds> b = {
      {"a100_gemm", {0.5, 0.869}}, {"a100_short_k", {0, 1024}}, {"h100_gemm", {0.4, 0.803}}, {"h100_short_k", {0, 1024}},
      {"h100_fp8", {0.2, 0.709}},  {"triton", {0.2, 1.0}},      {"torch_ew", {1, 4}},       {"fsdp_overlap", {0, 1}},
      {"fsdp2_overlap", {0, 1}},   {"slowdown", {0, 0.6}}};
  return b;
}

const char* const kA100s[] = {"a100-80gb", "a100-40gb"};
const char* const kH100s[] = {"h100-sxm", "h200", "gh200"};
const char* const kTritonDevices[] = {"a100-80gb", "a100-40gb", "h100-sxm"};
const char* const kTorchEngines[] = {"fsdp", "fsdp2", "deepspeed"};

// A figure as the override file writes it.
double rounded(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

bool among(const std::string& name, const auto& names) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// The Triton kernel's rate on `d`: FlashAttention-2's times `fraction` (nullptr where the device gives neither).
void set_triton(DeviceSpec& d, double fraction) {
  const AttentionRate* flash2 = d.attention_rate("flash2");
  for (AttentionRate& r : d.attention)
    if (flash2 && r.implementation == "triton")
      r.forward = rounded(flash2->forward * fraction, 4), r.backward = rounded(flash2->backward * fraction, 4);
}

void apply(SimInput& in, const std::string& gpu, const FittedConstants& c) {
  DeviceSpec& d = in.system.device;
  if (among(gpu, kA100s)) d.gemm_efficiency = rounded(c.at("a100_gemm"), 4), d.short_k = rounded(c.at("a100_short_k"), 1);
  if (among(gpu, kH100s))
    d.gemm_efficiency = rounded(c.at("h100_gemm"), 4), d.short_k = rounded(c.at("h100_short_k"), 1),
    d.gemm_fp8_efficiency = rounded(c.at("h100_fp8"), 4);
  if (among(gpu, kTritonDevices)) set_triton(d, c.at("triton"));
  EngineProfile& e = in.engine;
  if (!among(e.name, kTorchEngines)) return;
  e.elementwise_traffic = rounded(c.at("torch_ew"), 4);
  e.overlap_slowdown = rounded(c.at("slowdown"), 4);
  if (e.name == "fsdp") e.overlap.backward = e.overlap.reduce = rounded(c.at("fsdp_overlap"), 4);
  if (e.name == "fsdp2") e.overlap.backward = e.overlap.reduce = rounded(c.at("fsdp2_overlap"), 4);
}

std::vector<PublishedRun> fitting_half(const std::vector<PublishedRun>& runs, const std::string& without) {
  std::vector<PublishedRun> out;
  for (const PublishedRun& r : runs)
    if (r.half == "fit" && r.publication != without) out.push_back(r);
  return out;
}

double score_of(const std::vector<PublishedRun>& runs, const FittedConstants& c) {
  const std::vector<PublishedRun> priced = with_constants(runs, c);
  return fit_score(check_corpus(priced, false));
}
}  // namespace

FittedConstants preset_constants() {
  const DeviceSpec a100 = device_preset("a100-80gb").device, h100 = device_preset("h100-sxm").device;
  const EngineProfile fsdp = engine_profile("fsdp"), fsdp2 = engine_profile("fsdp2");
  const AttentionRate *flash2 = a100.attention_rate("flash2"), *triton = a100.attention_rate("triton");
  return {{"a100_gemm", a100.gemm_efficiency},
          {"a100_short_k", a100.short_k},
          {"h100_gemm", h100.gemm_efficiency},
          {"h100_short_k", h100.short_k},
          {"h100_fp8", h100.gemm_fp8_efficiency},
          {"triton", flash2 && triton ? rounded(triton->forward / flash2->forward, 4) : 1.0},
          {"torch_ew", fsdp.elementwise_traffic},
          {"fsdp_overlap", fsdp.overlap.backward},
          {"fsdp2_overlap", fsdp2.overlap.backward},
          {"slowdown", fsdp.overlap_slowdown}};
}

std::vector<PublishedRun> with_constants(const std::vector<PublishedRun>& runs, const FittedConstants& c) {
  std::vector<PublishedRun> out = runs;
  for (PublishedRun& r : out) {
    apply(r.input, r.gpu, c);
    if (r.ratio()) apply(r.over, r.gpu, c);
  }
  return out;
}

std::string constants_toml(const FittedConstants& c) {
  std::string out;
  for (const char* gpu : {"a100-80gb", "a100-40gb", "h100-sxm", "h200", "gh200"}) {
    SimInput in;
    in.system = device_preset(gpu);
    apply(in, gpu, c);
    const DeviceSpec& d = in.system.device;
    out += fmt::format("[devices.{}]\ngemm_efficiency = {:.4f}\nshort_k = {:.1f}\n", gpu, d.gemm_efficiency, d.short_k);
    if (among(std::string(gpu), kH100s)) out += fmt::format("gemm_fp8_efficiency = {:.4f}\n", d.gemm_fp8_efficiency);
    if (!among(std::string(gpu), kTritonDevices)) continue;
    for (const AttentionRate& r : d.attention)  // the file's list replaces the device's: every rate, Triton's refitted
      out += fmt::format("[[devices.{}.attention]]\nimplementation = \"{}\"\nforward = {}\nbackward = {}\nhalf_seq = {}\nsmall_head = {}\n",
                         gpu, r.implementation, r.forward, r.backward, r.half_seq, r.small_head);
  }
  for (const char* engine : kTorchEngines) {
    SimInput in;
    in.engine = engine_profile(engine);
    apply(in, "", c);
    const EngineProfile& e = in.engine;
    out += fmt::format("[engines.{}]\nelementwise_traffic = {:.4f}\noverlap_slowdown = {:.4f}\n", engine, e.elementwise_traffic,
                       e.overlap_slowdown);
    if (e.name != "deepspeed")
      out += fmt::format("overlap_backward = {:.4f}\noverlap_reduce = {:.4f}\n", e.overlap.backward, e.overlap.reduce);
  }
  return out;
}

double fit_score(const std::vector<RunCheck>& checks) {
  std::vector<double> a;
  for (const RunCheck& c : checks)
    if (!c.run->oom) a.push_back(std::abs(c.error));
  if (a.empty()) return 0;
  std::sort(a.begin(), a.end());
  const std::size_t n = a.size();
  const double median = n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
  const auto at = [&](double q) { return a[static_cast<std::size_t>(q * static_cast<double>(n - 1))]; };
  return median + 0.5 * at(0.9) + 0.25 * at(0.97);
}

FittedConstants neutral_constants() {
  FittedConstants out;
  for (const auto& [k, b] : bounds()) out[k] = (b.low + b.high) / 2;
  return out;
}

FittedConstants fit_constants(const std::vector<PublishedRun>& runs, int cycles, const FittedConstants& start) {
  const std::vector<PublishedRun> fit = fitting_half(runs, "");
  FittedConstants best = start;
  bool any = false;
  for (const PublishedRun& r : fit) any = any || !r.oom;
  if (!any) return best;
  double best_score = score_of(fit, best);
  std::map<std::string, double> width;
  for (const auto& [k, b] : bounds()) width[k] = (b.high - b.low) / 2;
  for (int cycle = 0; cycle < cycles; ++cycle)
    for (const auto& [k, b] : bounds()) {
      for (int i = 0; i < 9; ++i) {  // around the best so far: a point that improves moves the window's centre
        FittedConstants candidate = best;
        candidate[k] = std::clamp(best.at(k) - width[k] + 2 * width[k] * i / 8, b.low, b.high);
        if (const double s = score_of(fit, candidate); s < best_score) best = candidate, best_score = s;
      }
      width[k] /= 2;
    }
  return best;
}

std::vector<HeldOutSource> leave_one_source_out(const std::vector<PublishedRun>& runs, int cycles) {
  std::vector<HeldOutSource> out;
  std::set<std::string> sources;
  for (const PublishedRun& r : runs)
    if (!r.oom) sources.insert(r.publication);
  const FittedConstants start = neutral_constants();
  FittedConstants whole;  // the fit of the whole fitting half: held out, a publication without fitting runs leaves it as it is
  bool whole_fitted = false;
  for (const std::string& s : sources) {
    std::vector<PublishedRun> others, own;
    bool in_fit = false;
    for (const PublishedRun& r : runs) {
      (r.publication == s ? own : others).push_back(r);
      in_fit = in_fit || (r.publication == s && r.half == "fit");
    }
    if (!in_fit && !whole_fitted) whole = fit_constants(runs, cycles, start), whole_fitted = true;
    const FittedConstants c = in_fit ? fit_constants(others, cycles, start) : whole;
    const std::vector<PublishedRun> priced = with_constants(own, c);
    out.push_back({summarize_by_source(check_corpus(priced)).front(), c});
  }
  return out;
}

}  // namespace tierzero
