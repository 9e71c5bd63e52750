#include "core/sourced_table.h"

#include <cmath>
#include <fmt/format.h>

#include "tierzero/error.h"

namespace tierzero {

void set_source(Sources& sources, const std::string& key, const std::string& text) {
  for (auto& [k, v] : sources)
    if (k == key) {
      v = text;
      return;
    }
  sources.emplace_back(key, text);
}

std::string source_of(const Sources& sources, const std::string& key) {
  for (const auto& [k, v] : sources)
    if (k == key) return v;
  return "";
}

const toml::node* SourcedTable::node(const std::string& key) {
  read_.insert(key);
  return table_.get(key);
}

void SourcedTable::number(const std::string& key, double& field, double lo, double hi, double unit) {
  const toml::node* n = node(key);
  if (!n) return;
  const auto v = n->value<double>();
  TZ_CHECK(v && std::isfinite(*v), ConfigError, where_ + ": " + key + " must be a finite number");
  TZ_CHECK(*v >= lo && *v <= hi, ConfigError, where_ + ": " + key + fmt::format(" must be between {:g} and {:g}", lo, hi));
  field = *v * unit;
}

void SourcedTable::integer(const std::string& key, int& field, int lo, int hi) {
  const toml::node* n = node(key);
  if (!n) return;
  const auto v = n->value<std::int64_t>();
  TZ_CHECK(n->is_integer() && v && *v >= lo && *v <= hi, ConfigError,
           where_ + ": " + key + " must be an integer between " + std::to_string(lo) + " and " + std::to_string(hi));
  field = static_cast<int>(*v);
}

void SourcedTable::boolean(const std::string& key, bool& field) {
  const toml::node* n = node(key);
  if (!n) return;
  TZ_CHECK(n->is_boolean(), ConfigError, where_ + ": " + key + " must be true or false");
  field = *n->value<bool>();
}

void SourcedTable::text(const std::string& key, std::string& field, std::initializer_list<std::string_view> allowed) {
  const toml::node* n = node(key);
  if (!n) return;
  const auto v = n->value<std::string>();
  TZ_CHECK(v, ConfigError, where_ + ": " + key + " must be a string");
  if (allowed.size() > 0) {
    bool ok = false;
    std::string names;
    for (std::string_view a : allowed) ok = ok || *v == a, names += (names.empty() ? "" : ", ") + std::string(a);
    TZ_CHECK(ok, ConfigError, where_ + ": " + key + " must be one of " + names + ", not '" + *v + "'");
  }
  field = *v;
}

bool SourcedTable::take(const std::string& key) { return node(key) != nullptr; }

void SourcedTable::finish(Sources& sources) const {
  for (auto&& [k, v] : table_) {
    const std::string key(k.str());
    if (read_.count(key)) continue;
    const std::string base = key.size() > 7 && key.ends_with("_source") ? key.substr(0, key.size() - 7) : "";
    TZ_CHECK(!base.empty() && read_.count(base), ConfigError, where_ + ": unknown key '" + key + "'");
    const auto text = v.value<std::string>();
    TZ_CHECK(text, ConfigError, where_ + ": " + key + " must be a string");
    set_source(sources, base, *text);
  }
}

}  // namespace tierzero
