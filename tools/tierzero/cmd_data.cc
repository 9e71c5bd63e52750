// tierzero data prepare: text -> token file (byte-level tokenizer).
#include <fstream>
#include <sstream>

#include "commands.h"
#include "tierzero/data.h"
#include "tierzero/error.h"

namespace tierzero::cli {

void add_data_command(CLI::App& app, Context& ctx) {
  CLI::App* data = app.add_subcommand("data", "Prepare training data");
  data->require_subcommand(1);
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* prep = data->add_subcommand("prepare", "Tokenise a text file (byte-level, vocabulary 256) into a token file");
  prep->add_option("--input", paths->first, "UTF-8 or any text file")->required();
  prep->add_option("--output", paths->second, "Token file to write (.bin)")->required();
  prep->callback([paths, &ctx] {
    std::ifstream in(paths->first, std::ios::binary);
    TZ_CHECK(in, ConfigError, "cannot read input '" + paths->first + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    const auto tokens = byte_encode(ss.str());
    write_token_file(paths->second, tokens, 256);
    std::fprintf(stderr, "tierzero: wrote %zu tokens to %s\n", tokens.size(), paths->second.c_str());
    ctx.exit_code = 0;
  });
}

}  // namespace tierzero::cli
