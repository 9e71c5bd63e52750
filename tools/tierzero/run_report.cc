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
                    LineStyle style = LineStyle::solid, double scale = 1) {
  Series s{name, {}, style};
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].contains(field)) s.points.push_back({x[i], num(rows[i], field) * scale});
  return s;
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

Chart step_time_chart(const std::vector<json>& rows, const std::vector<double>& x, const std::vector<XMarker>& marks,
                      const std::optional<SimResult>& predicted) {
  static constexpr std::pair<const char*, const char*> kParts[] = {
      {"forward_s", "forward"},         {"backward_s", "backward"},         {"optimizer_s", "optimizer"},
      {"gather_wait_s", "gather wait"}, {"reduce_wait_s", "reduce wait"},   {"control_wait_s", "control wait"},
      {"slot_wait_s", "slot wait"},     {"checkpoint_s", "checkpoint"}};
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
  if (!split) c.note = "Run with --breakdown (DeepSpeed's wall_clock_breakdown) to split the step into compute and waits.";
  return c;
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

Chart memory_chart(const json& measured, const std::optional<SimResult>& predicted, const std::optional<System>& sys, std::string& note) {
  std::vector<std::string> states;
  std::map<std::string, double> have, want;
  double have_total = 0, want_total = 0;
  for (const auto& [k, v] : measured.items()) {
    if (k.ends_with("_host") || k.ends_with("_file")) continue;  // off the device
    states.push_back(k);
    have[k] = v.get<double>(), have_total += v.get<double>();
  }
  if (predicted)
    for (const auto& [k, v] : predicted->memory_bytes) {
      if (!have.count(k)) states.push_back(k);
      want[k] = v, want_total += v;
    }
  states.push_back("total");
  const double unit = std::max(have_total, want_total) >= 1e9 ? 1e9 : 1e6;
  const std::string unit_name = unit == 1e9 ? "GB" : "MB";
  BarSeries m{"measured", {}, ""}, p{"predicted", {}, ""};
  for (const std::string& s : states) {
    m.values.push_back(s == "total" ? have_total / unit : have.count(s) ? have[s] / unit : NAN);
    p.values.push_back(s == "total" ? want_total / unit : want.count(s) ? want[s] / unit : NAN);
  }
  std::vector<BarSeries> series = {m};
  if (predicted) series.push_back(p);
  std::optional<YLine> limit;
  if (sys && sys->memory_bytes > 0) {
    const double top = std::max(have_total, want_total);
    note = fmt::format("The device's memory on {}: {:.3g} GB; the run used {:.2g}% of it.", sys->name, sys->memory_bytes / 1e9,
                       100 * have_total / sys->memory_bytes);
    if (sys->memory_bytes <= 20 * top) limit = YLine{sys->memory_bytes / unit, "device memory"};
    else note += " (Its line would flatten the bars: it is left out.)";
  }
  return bar_chart("Memory per state (rank 0)", unit_name, states, series, limit);
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
        {"topology", topology_words(*topo)},
        {"batch", fmt::format("micro-batch {} x accumulation {} x sequence {} x {} ranks = {} tokens per step{}", t.micro_batch,
                              t.grad_accum, t.seq_len, meta->world_size,
                              static_cast<long long>(t.micro_batch) * t.grad_accum * t.seq_len * meta->world_size,
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
  Series tps = field_series("tokens/s", rows, axes.step, "tokens_per_s");
  Series tflops = field_series("TFLOPS per device", rows, axes.step, "tflops", LineStyle::solid);
  tflops.y_axis = 1;
  training.charts.push_back(line_chart("Throughput", {"step", "tokens/s", "TFLOPS per device", false, false}, {tps, tflops}, step_marks));
  training.charts.push_back(step_time_chart(rows, axes.step, step_marks, predicted));
  page.sections.push_back(training);

  PageSection system{"Communication and memory", {}, {}, {}};
  if (rows.back().contains("bytes_per_level") && topo) system.charts.push_back(bytes_chart(rows, axes.step, step_marks, predicted, *topo));
  if (const auto m = rows.back().find("memory_bytes"); m != rows.back().end()) {
    std::string note;
    Chart c = memory_chart(*m, predicted, in.system, note);
    c.note = note;
    system.charts.push_back(c);
  }
  if (system.charts.empty()) system.paragraphs.push_back("A single-process run has no levels to communicate over and no plan's memory.");
  page.sections.push_back(system);
  return page;
}

}  // namespace tierzero::cli
