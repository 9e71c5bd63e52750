// CheckpointWriter: the save directory's protocol (docs/formats.md), in one
// process (rank 0 of a sharded run) while the ranks write their shards:
// a step is written into DIR/.tmp-step-N (prepare), which becomes
// DIR/step-N only once its meta.json is written (commit); then `latest`
// (written beside and renamed) names it, and of the steps this writer
// committed only the newest `keep` stay (0 = all; never another run's,
// never the one `latest` names). A crash at any point leaves the previous
// checkpoint and `latest` intact. Throws FormatError on a filesystem
// failure; says what a user should know as warnings, never prints.
#pragma once

#include <string>
#include <vector>

#include "tierzero/checkpoint.h"

namespace tierzero {

class CheckpointWriter {
 public:
  // DIR/.tmp-NAME, where step NAME's files are written until commit.
  static std::string temporary(const std::string& dir, const std::string& name);
  // Creates DIR (if needed) and an empty temporary directory for NAME,
  // removing one that an interrupted save left. Returns "" or the problem.
  static std::string prepare(const std::string& dir, const std::string& name);
  // Removes NAME's temporary directory (a save that failed on some rank).
  static void abandon(const std::string& dir, const std::string& name);
  // Writes meta.json into NAME's temporary directory, makes it DIR/NAME,
  // points `latest` at it and prunes to `keep`. Returns DIR/NAME; appends to `warnings`.
  std::string commit(const std::string& dir, const std::string& name, const CheckpointMeta& meta, int keep,
                     std::vector<std::string>& warnings);

 private:
  std::vector<std::string> committed_;  // step directories this writer committed, oldest first (what keep prunes)
  bool warned_newer_ = false;           // said once that DIR holds another run's newer steps
};

}  // namespace tierzero
