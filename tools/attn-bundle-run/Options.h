//===- Options.h - attn-bundle-run's command line -------------*- C++ -*-===//

#ifndef ATTN_BUNDLE_RUN_OPTIONS_H
#define ATTN_BUNDLE_RUN_OPTIONS_H

#include <cstdint>
#include <string>

namespace attn_bundle_run {

/// Prints "attn-bundle-run: error: MESSAGE" and exits with status 2.
[[noreturn]] void fail(const std::string &message);

struct Options {
  std::string bundle, function;
  int64_t batch = 1, hq = 4, hkv = 4, m = 128, n = 128, window = 0;
  int repeat = 10, rotate = 0; // rotate 0: enough input sets to defeat L2
  std::string reference = "auto";
  bool causal = false, json = false;
  /// Whether --causal or --window was given (else the bundle decides).
  bool causalGiven = false, windowGiven = false;
};

/// The options of `argv`; --help and --version print and exit 0, and any
/// bad option fails with a message naming it.
Options parseOptions(int argc, char **argv);

} // namespace attn_bundle_run

#endif // ATTN_BUNDLE_RUN_OPTIONS_H
