#include "run_report.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "chart.h"
#include "tierzero/error.h"
#include "tierzero/simulator.h"
#include "tierzero/topology.h"

namespace tierzero::cli {

namespace {
using json = nlohmann::ordered_json;

double num(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}

// The rows' x values on the two time axes: the step, and the tokens trained by the end of it.
struct TimeAxes {
  std::vector<double> step, tokens;
  explicit TimeAxes(const std::vector<json>& rows) {
    double total = 0;
    for (const json& r : rows) {
      total += num(r, "tokens");
      step.push_back(num(r, "step"));
      tokens.push_back(total);
    }
  }
  // The tokens trained by the end of step `s` (the step a restart continued after).
  double tokens_through(std::int64_t s) const {
    double t = 0;
    for (std::size_t i = 0; i < step.size() && step[i] <= static_cast<double>(s); ++i) t = tokens[i];
    return t;
  }
};

std::string restart_label(const RunRestart& r) {
  return r.redone == 0 ? fmt::format("resumed after {}", r.step) : fmt::format("restart after {} ({} redone)", r.step, r.redone);
}

std::string restart_words(const RunRestart& r) {
  return r.redone == 0
             ? fmt::format("resumed after step {} from the checkpoint its previous run stopped at (a preemption or a planned stop)", r.step)
             : fmt::format("restarted after step {} from a checkpoint after its previous run died {} step{} later (trained again)", r.step,
                           r.redone, r.redone == 1 ? "" : "s");
}

// A series of one row field against one time axis.
Series field_series(const std::string& name, const std::vector<json>& rows, const std::vector<double>& x, const char* field,
                    LineStyle style = LineStyle::solid) {
  Series s{name, {}, style};
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].contains(field)) s.points.push_back({x[i], num(rows[i], field)});
  return s;
}

// The median of the rows' step times after the first (it warms up), or NAN.
double median_step_time(const std::vector<json>& rows) {
  std::vector<double> t;
  for (std::size_t i = rows.size() > 1 ? 1 : 0; i < rows.size(); ++i)
    if (const double v = num(rows[i], "step_time_s"); std::isfinite(v)) t.push_back(v);
  if (t.empty()) return NAN;
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

// A flat dashed line of a predicted value across the run's steps.
Series predicted_line(const std::string& name, const std::vector<double>& x, double y) {
  return Series{name, {{x.front(), y}, {x.back(), y}}, LineStyle::dashed};
}

std::string topology_words(const Topology& t) {
  std::string s = std::to_string(t.size()) + " ranks as " + t.to_string();
  std::string below = "rank", parts;
  for (Level l : t.levels()) {
    const int f = t.fanout(l);
    const std::string name(level_name(l));
    parts += (parts.empty() ? "" : ", ") + std::to_string(f) + " " + below + (f == 1 ? "" : "s") + (l == Level::world ? "" : " per " + name);
    below = name;
  }
  return s + ": " + parts;
}

std::optional<SimResult> predict(const CheckpointMeta& meta, bool recompute, const System& sys, std::vector<std::string>& notes) {
  SimInput in;
  in.model = meta.model;
  in.system = sys;
  in.ranks = meta.world_size;
  in.micro_batch = meta.train.micro_batch;
  in.seq_len = meta.train.seq_len;
  in.grad_accum = meta.train.grad_accum;
  in.plan = meta.plan;
  in.dtype = meta.train.param_dtype;
  in.recompute = Recompute{recompute ? Recompute::Kind::full : Recompute::Kind::none};
  in.topology_spec = meta.topology;
  in.mesh.tp = meta.tp;
  if (!meta.tp_level.empty()) in.mesh.tp_level = parse_level(meta.tp_level);
  try {
    return simulate(in);
  } catch (const Error& e) {
    notes.push_back("no prediction on " + sys.name + ": " + e.message());
    return std::nullopt;
  }
}

Chart loss_chart(const std::vector<json>& rows, const std::vector<double>& x, const std::string& x_name, const std::vector<XMarker>& marks) {
  std::vector<Series> series = {field_series("training", rows, x, "loss")};
  Series val = field_series("validation", rows, x, "val_loss", LineStyle::points);
  if (!val.points.empty()) series.push_back(val);
  return line_chart("Loss against " + x_name, {x_name, "loss", "", false, false}, series, marks);
}

// Where the system's compute figures come from, in words: its GEMM efficiency's source (bench comm names the step it
// was fitted to), else its device preset's.
std::string calibration_words(const System& sys) {
  const std::string fitted = sys.device.source_of("gemm_efficiency");
  if (!fitted.empty()) return fitted;
  return sys.device.name.empty() ? "the system file's own figures" : "the " + sys.device.name + " device's figures";
}

Chart step_time_chart(const std::vector<json>& rows, const std::vector<double>& x, const std::vector<XMarker>& marks,
                      const std::optional<SimResult>& predicted, const std::optional<System>& sys) {
  static constexpr std::pair<const char*, const char*> kParts[] = {
      {"forward_s", "forward"},         {"backward_s", "backward"},         {"optimizer_s", "optimizer"},
      {"gather_wait_s", "gather wait"}, {"reduce_wait_s", "reduce wait"},   {"control_wait_s", "control wait"},
      {"slot_wait_s", "slot wait"},     {"tensor_wait_s", "tensor wait"},   {"checkpoint_s", "checkpoint"}};
  const bool split = rows.back().contains("breakdown");
  std::vector<Series> series;
  if (split) {
    for (const auto& [field, name] : kParts) series.push_back(Series{name, {}, LineStyle::area});
    series.push_back(Series{"other (validation, logging, ...)", {}, LineStyle::area});
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].contains("breakdown")) continue;
      const json& b = rows[i]["breakdown"].at(0);  // rank 0's
      double parts = 0;
      for (std::size_t k = 0; k < std::size(kParts); ++k) {
        const double v = num(b, kParts[k].first);
        parts += v;
        series[k].points.push_back({x[i], v});
      }
      series.back().points.push_back({x[i], std::max(0.0, num(rows[i], "step_time_s") - parts)});
    }
  } else {
    series.push_back(field_series("step", rows, x, "step_time_s", LineStyle::area));
  }
  if (predicted) series.push_back(predicted_line("predicted step", x, predicted->step_time_s));  // dashed: beside the pile, not on it
  Chart c = line_chart(split ? "Step time by its breakdown (rank 0)" : "Step time", {"step", "seconds", "", false, true}, series, marks);
  const double median = median_step_time(rows);
  if (predicted && sys)
    c.note = fmt::format("Measured: a median step of {:.3g} s; predicted on system '{}': {:.3g} s (compute {:.3g} s, communication left exposed "
                         "{:.3g} s), so the run took {:.2f}x the prediction. The prediction prices the engine's step alone (not data "
                         "loading, logging, validation or checkpoints), its compute at the system's calibration: {}. ",
                         median, sys->name, predicted->step_time_s, predicted->compute_s, predicted->exposed_comm_s,
                         median / predicted->step_time_s, calibration_words(*sys));
  // Measured on the demo (8 ranks on 2 cores, --breakdown): each rank computed ~3 ms of a ~24 ms step and waited ~20 ms
  // in gathers and reductions, where bench comm's collectives, every rank in them at once, priced ~1.2 ms.
  if (predicted && sys && sys->device.sm_count == 0 && median > 1.25 * predicted->step_time_s)
    c.note += "Where ranks share cores (more ranks than cores on the machine), a rank's collective completes only when its peers are "
              "scheduled, and waiting ranks poll, taking CPU time from those computing: the step's waits grow beyond the "
              "communication the simulator prices from tierzero bench comm, which times each collective with every rank in it "
              "and none computing. ";
  if (!split) c.note += "Run with --breakdown (DeepSpeed's wall_clock_breakdown) to split the step into compute and waits.";
  return c;
}

// One rate of the rows against the step, with the predicted rate dashed.
Chart rate_chart(const std::string& title, const std::string& y, const std::vector<json>& rows, const std::vector<double>& x,
                 const char* field, const std::vector<XMarker>& marks, std::optional<double> predicted) {
  std::vector<Series> series = {field_series("measured", rows, x, field)};
  if (predicted) series.push_back(predicted_line("predicted", x, *predicted));
  return line_chart(title, {"step", y, "", false, false}, series, marks);
}

Chart bytes_chart(const std::vector<json>& rows, const std::vector<double>& x, const std::vector<XMarker>& marks,
                  const std::optional<SimResult>& predicted, const Topology& topo) {
  std::vector<Series> series;
  for (Level l : topo.levels()) {
    const std::string name(level_name(l));
    Series s{name + " (measured)", {}, LineStyle::solid};
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (const auto b = rows[i].find("bytes_per_level"); b != rows[i].end() && b->contains(name)) s.points.push_back({x[i], num(*b, name.c_str()) / 1e6});
    series.push_back(s);
    if (predicted) series.push_back(predicted_line(name + " (predicted)", x, static_cast<double>(predicted->bytes_per_level[static_cast<int>(l)]) / 1e6));
  }
  Chart c = line_chart("Bytes received per level per step (rank 0)", {"step", "MB", "", false, false}, series, marks);
  c.note = "Dashed: what the simulator predicts for this plan, model, batch and system.";
  return c;
}

// MB, or GB from a gigabyte up.
std::pair<double, std::string> memory_unit(double largest) { return largest >= 1e9 ? std::pair{1e9, "GB"} : std::pair{1e6, "MB"}; }

// The engine's allocations on rank 0 by state, measured, beside the simulator's states (its runtime is the process's,
// drawn with the peak resident set).
Chart allocations_chart(const json& measured, const std::optional<SimResult>& predicted, const std::optional<System>& sys) {
  std::vector<std::string> states;
  std::map<std::string, double> have, want;
  double have_total = 0, want_total = 0;
  for (const auto& [key, v] : measured.items()) {
    if (key.ends_with("_host") || key.ends_with("_file")) continue;  // off the device
    // The engine's gather slots and buckets ("buffers") and a tied head's embedding ("embed") are what the
    // simulator's memory model counts together as "gathered" (src/sim/memory_model.cc).
    const std::string k = key == "buffers" || key == "embed" ? "gathered" : key;
    if (!have.count(k)) states.push_back(k);
    have[k] += v.get<double>(), have_total += v.get<double>();
  }
  if (predicted)
    for (const auto& [k, v] : predicted->memory_bytes) {
      if (k == "runtime") continue;
      if (!have.count(k)) states.push_back(k);
      want[k] = v, want_total += v;
    }
  states.push_back("total");
  const auto [unit, unit_name] = memory_unit(std::max(have_total, want_total));
  BarSeries m{"measured", {}, ""}, p{"predicted", {}, ""};
  for (const std::string& s : states) {
    m.values.push_back(s == "total" ? have_total / unit : have.count(s) ? have[s] / unit : NAN);
    p.values.push_back(s == "total" ? want_total / unit : want.count(s) ? want[s] / unit : NAN);
  }
  std::vector<BarSeries> series = {m};
  if (predicted) series.push_back(p);
  Chart c = bar_chart("The engine's allocations by state (rank 0)", unit_name, states, series, std::nullopt, BarAxis::horizontal);
  c.note = "What the engine allocates (its states, buffers and activations), measured, beside the simulator's states; a bar on "
           "one side only is a part the other does not count apart.";
  if (predicted && sys && sys->device.sm_count > 0 && sys->memory_bytes > 0)  // a GPU: the device's memory holds these and the runtime
    c.note += fmt::format(" The device's memory on system '{}': {:.3g} GB; the prediction's total (with the runtime, {:.3g} GB) is {:.2g}% of it.",
                          sys->name, sys->memory_bytes / 1e9, predicted->memory_total / 1e9, 100 * predicted->memory_total / sys->memory_bytes);
  return c;
}

// Rank 0's process, measured (its peak resident set: the engine's allocations and everything else the process holds)
// beside the prediction's total (its states and the runtime). A GPU rank's resident set is host memory, not the
// device's: there the prediction is left out.
Chart process_chart(const json& row, const std::optional<SimResult>& predicted, const std::optional<System>& sys) {
  double allocated = 0;
  for (const auto& [k, v] : row["memory_bytes"].items())
    if (!k.ends_with("_host") && !k.ends_with("_file")) allocated += v.get<double>();
  const double rss = num(row, "peak_rss_bytes");
  const bool cpu = sys && sys->device.sm_count == 0;  // a CPU rank: its memory is the process's
  const bool compare = predicted && cpu;
  double runtime = 0;
  if (compare)
    for (const auto& [k, v] : predicted->memory_bytes)
      if (k == "runtime") runtime = v;
  const auto [unit, unit_name] = memory_unit(std::max(rss, compare ? predicted->memory_total : 0.0));
  const std::vector<std::string> parts = {"engine's allocations", "runtime and the rest", "process (peak RSS)"};
  std::vector<BarSeries> series = {{"measured", {allocated / unit, (rss - allocated) / unit, rss / unit}, ""}};
  if (compare)
    series.push_back({"predicted", {(predicted->memory_total - runtime) / unit, runtime / unit, predicted->memory_total / unit}, ""});
  Chart c = bar_chart("The process's memory (rank 0)", unit_name, parts, series, std::nullopt, BarAxis::horizontal);
  c.note = fmt::format("The process's peak resident set (measured: {:.3g} {}){}.", rss / unit, unit_name,
                       compare ? fmt::format(" beside the prediction's total (its states and the runtime: {:.3g} {}; {:+.1f}%)",
                                             predicted->memory_total / unit, unit_name, 100 * (predicted->memory_total / rss - 1))
                               : std::string(" (a GPU rank's is host memory: no prediction to compare it with)"));
  if (compare && sys->memory_bytes > 0)
    c.note += fmt::format(" The memory per rank on system '{}': {:.3g} GB; the run's peak used {:.3g}% of it.", sys->name, sys->memory_bytes / 1e9,
                          100 * rss / sys->memory_bytes);
  return c;
}
}  // namespace

HtmlPage run_report(const RunReportInput& in) {
  const std::vector<json>& rows = in.metrics.rows;
  HtmlPage page;
  page.notes = in.metrics.notes;
  std::optional<CheckpointMeta> meta;
  bool recompute = false;
  if (in.metrics.run) {
    meta = CheckpointMeta::from_json(in.metrics.run->dump(), in.metrics.path + " ('run')");
    recompute = in.metrics.run->value("recompute", false);
  } else if (in.checkpoint) {
    meta = in.checkpoint;
  }
  const std::string strategy = rows.back().value("strategy", std::string("?"));
  page.title = meta ? fmt::format("tierzero run: {} with {} on {} ranks", meta->model.name, strategy, meta->world_size)
                    : "tierzero run: " + in.metrics.path;
  page.subtitle = fmt::format("steps {} to {} from {}{}", num(rows.front(), "step"), num(rows.back(), "step"), in.metrics.path,
                              in.save_dir.empty() ? "" : " and " + in.save_dir);

  const TimeAxes axes(rows);
  std::vector<XMarker> step_marks, token_marks;
  for (const RunRestart& r : in.metrics.restarts) {
    step_marks.push_back({static_cast<double>(r.step), restart_label(r)});
    token_marks.push_back({axes.tokens_through(r.step), restart_label(r)});
  }

  PageSection about{"The run", {}, {}, {}};
  std::optional<SimResult> predicted;
  std::optional<Topology> topo;
  if (meta) {
    topo = Topology::parse(meta->topology, meta->world_size);
    const TrainConfig& t = meta->train;
    about.facts = {
        {"model", meta->model.describe() + fmt::format(" ({:.3g} M parameters)", meta->model.num_params() / 1e6)},
        {"plan", strategy + ": " + meta->plan.describe()},
        {"topology", topology_words(*topo) +
                         (meta->tp > 1 ? fmt::format("; tensor-parallel groups of {} on the {} level", meta->tp, meta->tp_level) : "")},
        {"batch", fmt::format("micro-batch {} x accumulation {} x sequence {} x {} {}ranks = {} tokens per step{}", t.micro_batch,
                              t.grad_accum, t.seq_len, meta->world_size / meta->tp, meta->tp > 1 ? "data-parallel " : "",
                              static_cast<long long>(t.micro_batch) * t.grad_accum * t.seq_len * (meta->world_size / meta->tp),
                              recompute ? ", activations recomputed" : "")},
        {"precision", fmt::format("{} parameters, {} GEMMs", dtype_name(t.param_dtype), rows.back().value("matmul", std::string("?")))}};
    if (in.system) predicted = predict(*meta, recompute, *in.system, page.notes);
    about.facts.push_back({"prediction", predicted ? "the simulator on " + in.system->name + " (" + in.system_origin + ")"
                                                   : in.system ? "none (see the note above)" : "none: no system given (--system)"});
  } else {
    page.notes.push_back("The metrics say nothing of the run's model and plan (a single-process run, or one written before tierzero "
                         "0.1 recorded them) and no save folder was given: no description and no prediction.");
  }
  if (meta && !in.system)
    page.notes.push_back("No prediction: give --system (a preset, or the file `tierzero bench comm --write-system` wrote on the "
                         "machine the run ran on); a measured-system.toml beside the metrics or the save folder is taken by itself.");
  about.facts.push_back({"steps", fmt::format("{} rows, steps {} to {}, {:.4g} M tokens", rows.size(), num(rows.front(), "step"),
                                              num(rows.back(), "step"), axes.tokens.back() / 1e6)});
  for (const RunRestart& r : in.metrics.restarts) about.facts.push_back({"restart", restart_words(r)});
  if (in.metrics.restarts.empty()) about.facts.push_back({"restarts", "none"});
  page.sections.push_back(about);

  PageSection training{"Training", {}, {}, {}};
  training.charts.push_back(loss_chart(rows, axes.step, "step", step_marks));
  training.charts.push_back(loss_chart(rows, axes.tokens, "tokens", token_marks));
  // Apart: TFLOPS is tokens/s times a constant, so on two axes of one chart the lines would lie on top of each other.
  training.charts.push_back(rate_chart("Tokens per second (all ranks)", "tokens/s", rows, axes.step, "tokens_per_s", step_marks,
                                       predicted ? std::optional(predicted->tokens_per_s_per_device * meta->world_size) : std::nullopt));
  training.charts.push_back(rate_chart("TFLOPS per device", "TFLOPS", rows, axes.step, "tflops", step_marks,
                                       predicted ? std::optional(predicted->tflops_per_device) : std::nullopt));
  training.charts.push_back(step_time_chart(rows, axes.step, step_marks, predicted, in.system));
  page.sections.push_back(training);

  PageSection system{"Communication and memory", {}, {}, {}};
  if (rows.back().contains("bytes_per_level") && topo) system.charts.push_back(bytes_chart(rows, axes.step, step_marks, predicted, *topo));
  if (rows.back().contains("memory_bytes")) {
    system.charts.push_back(allocations_chart(rows.back()["memory_bytes"], predicted, in.system));
    if (rows.back().contains("peak_rss_bytes")) system.charts.push_back(process_chart(rows.back(), predicted, in.system));
  }
  if (system.charts.empty()) system.paragraphs.push_back("A single-process run has no levels to communicate over and no plan's memory.");
  page.sections.push_back(system);
  return page;
}

}  // namespace tierzero::cli
