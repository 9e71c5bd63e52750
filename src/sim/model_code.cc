#include "tierzero/model_code.h"

#include "core/embedded_data.h"
#include "core/sourced_table.h"
#include "core/toml_read.h"
#include "tierzero/error.h"

namespace tierzero {

std::string ModelCode::source_of(const std::string& key) const { return tierzero::source_of(sources, key); }

std::vector<std::string> model_code_names() { return embedded_names("model-code"); }

namespace {
// PREFIX_forward_bytes, _backward_bytes, _forward_kernels, _backward_kernels: all four or none; PREFIX_source for the group.
void read_op(SourcedTable& t, const std::string& prefix, CodedOp& op) {
  const std::string keys[] = {prefix + "_forward_bytes", prefix + "_backward_bytes", prefix + "_forward_kernels", prefix + "_backward_kernels"};
  int given = 0;
  for (const std::string& k : keys) given += t.take(k) ? 1 : 0;
  if (given == 0) return;
  TZ_CHECK(given == 4, ConfigError, t.where() + ": " + prefix + " needs all of " + keys[0] + ", " + keys[1] + ", " + keys[2] + ", " + keys[3]);
  op.listed = true;
  t.number(keys[0], op.forward_bytes, 0, 1e3);
  t.number(keys[1], op.backward_bytes, 0, 1e3);
  t.number(keys[2], op.forward_kernels, 1, 100);
  t.number(keys[3], op.backward_kernels, 1, 100);
  t.source_only(prefix);
}

ModelCode parse_code(std::string_view name, std::string_view text) {
  const std::string origin = "data/model-code/" + std::string(name) + ".toml";
  const toml::table root = parse_toml(text, origin);
  ModelCode c;
  c.name = std::string(name);
  SourcedTable t(root, origin);
  read_op(t, "norm", c.norm);
  read_op(t, "rope", c.rope);
  TZ_CHECK(c.norm.listed == t.take("norm_saved_bytes"), ConfigError, origin + ": norm_saved_bytes goes with the norm's kernels");
  t.number("norm_saved_bytes", c.norm_saved_bytes, 0, 1e3);
  t.source_only("code");
  t.finish(c.sources);
  return c;
}
}  // namespace

ModelCode model_code(std::string_view name) {
  if (name.empty() || name == "engine") return {};
  if (const auto text = embedded_text("model-code", name)) return parse_code(name, *text);
  std::string names = "engine";
  for (const std::string& n : model_code_names()) names += ", " + n;
  TZ_THROW(ConfigError, "unknown model code '" + std::string(name) + "' (codes: " + names + ")");
}

}  // namespace tierzero
