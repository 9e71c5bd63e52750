// libFuzzer targets for every parser of outside input (built by
// scripts/fuzz.sh with -fsanitize=fuzzer,address,undefined; one executable
// per parser, chosen by TZ_FUZZ_PARSER). A parser may reject an input only
// with a tierzero::Error naming the problem: any other exception, a crash,
// a sanitizer report, a hang or an unbounded allocation is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "tierzero/checkpoint.h"
#include "tierzero/data.h"
#include "tierzero/deepspeed_config.h"
#include "tierzero/error.h"
#include "tierzero/safetensors.h"
#include "tierzero/system.h"
#include "tierzero/train_config.h"

#ifndef TZ_FUZZ_PARSER
#error "TZ_FUZZ_PARSER must name the parser under test"
#endif

namespace {
using namespace tierzero;

void parse(std::string_view parser, std::string_view in) {
  const std::string text(in);
  if (parser == "run_config") {
    TrainConfig cfg;
    parse_train_config(text, "fuzz.toml", cfg);
  } else if (parser == "system") {
    parse_system_toml(text, "fuzz.toml");
  } else if (parser == "deepspeed") {
    static const Topology topo = Topology::parse("package=2,node=2,world=2", 8);
    TrainConfig cfg;
    const DeepSpeedMapping m = parse_deepspeed_config(text, "ds.json", topo, cfg);
    check_train_batch_size(m, "ds.json", cfg, 8);
  } else if (parser == "token_file") {
    check_token_file(in.data(), in.size(), "fuzz.bin");
  } else if (parser == "safetensors") {
    for (const auto& [name, t] : parse_safetensors(in, "fuzz.safetensors").tensors)
      if (t.dtype == "F32" || t.dtype == "BF16" || t.dtype == "F16") t.as_f32();
  } else if (parser == "checkpoint_meta") {
    CheckpointMeta::from_json(text, "meta.json").to_json();
  } else {
    __builtin_trap();  // a parser name CMake does not know
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    parse(TZ_FUZZ_PARSER, std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const tierzero::Error&) {
    // a clear rejection: what a bad file must get
  }
  return 0;
}
