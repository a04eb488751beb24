// What each command-line option's value does to scl-bench's Options: parsed, range-checked and
// stored, or refused with a message naming the option. parse_options (options.h) applies the
// options here one at a time, then checks how they combine.
#ifndef STRATACL_TOOLS_SCL_BENCH_OPTION_VALUES_H_
#define STRATACL_TOOLS_SCL_BENCH_OPTION_VALUES_H_

#include <string>
#include <string_view>

#include "nccl_options.h"
#include "options.h"

namespace stratacl::bench {

// What the option-parsing loop remembers beyond the options themselves.
struct GivenOptions {
  bool min = false, max = false, factor = false, step = false, mem = false, mode = false;
  int registration = 0;  // -R
};

// Parses one option value into `options`; returns an error message or an empty string.
// `flag` is the option as the user spelled it, for the message.
std::string apply_option(OptionKey key, std::string_view flag, std::string_view value,
                         Options& options, GivenOptions& given);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_OPTION_VALUES_H_
