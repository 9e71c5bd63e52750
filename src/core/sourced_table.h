// A TOML table of figures, each optionally followed by KEY_source (where the
// figure comes from): typed reads with range checks, the sources collected,
// and every key that was neither read nor a read key's source reported as
// unknown. The reader of system, device and engine files. Internal.
#pragma once
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <toml++/toml.h>
#include <utility>
#include <vector>

namespace tierzero {

using Sources = std::vector<std::pair<std::string, std::string>>;

// Sets `key`'s source in `sources`, replacing an earlier one (a based_on file's).
void set_source(Sources& sources, const std::string& key, const std::string& text);
// The source of `key`, or "".
std::string source_of(const Sources& sources, const std::string& key);

class SourcedTable {
 public:
  SourcedTable(const toml::table& table, std::string where) : table_(table), where_(std::move(where)) {}

  // When `key` is present: field = value x unit, ConfigError naming it outside [lo, hi].
  void number(const std::string& key, double& field, double lo, double hi, double unit = 1);
  void integer(const std::string& key, int& field, int lo, int hi);
  void boolean(const std::string& key, bool& field);
  // A string, one of `allowed` when given.
  void text(const std::string& key, std::string& field, std::initializer_list<std::string_view> allowed = {});
  // A key whose value the caller reads itself (a sub-table); counted as known.
  bool take(const std::string& key);
  // A source-only key (KEY_source for a group of fields).
  void source_only(const std::string& key) { read_.insert(key); }
  // Moves every KEY_source of a read key into `sources`; ConfigError for the first unknown key.
  void finish(Sources& sources) const;

  const std::string& where() const { return where_; }
  const toml::table& table() const { return table_; }

 private:
  const toml::node* node(const std::string& key);
  const toml::table& table_;
  std::string where_;
  std::set<std::string> read_;
};

}  // namespace tierzero
