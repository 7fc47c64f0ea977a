//===- Options.cpp - attn-bundle-run's command line -----------------------===//

#include "Options.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <getopt.h>
#include <vector>

#ifndef ATTN_VERSION
#define ATTN_VERSION "unknown"
#endif

using namespace attn_bundle_run;

void attn_bundle_run::fail(const std::string &message) {
  std::fprintf(stderr, "attn-bundle-run: error: %s\n", message.c_str());
  std::exit(2);
}

namespace {

const char *kUsage =
    "usage: attn-bundle-run BUNDLE.json [--function=NAME] [--batch=B] "
    "[--heads=Hq:Hkv] [--q-len=M] [--kv-len=N] [--causal] [--window=W] "
    "[--repeat=R] [--rotate=K] [--reference=auto|cpu|gpu] [--json]";

const char *kHelp =
    "\n"
    "Runs a function of a kernel bundle (bundle.json written by\n"
    "attn-write-kernel-bundle) on the GPU with random inputs, checks its\n"
    "output against a float64 reference (which evaluates the regions the\n"
    "bundle records) and times it. The function must take (q, k, v, out\n"
    "[, logsumexp]) memrefs, then any captured tensors and block-mask lists;\n"
    "one that records it computes attention_grad takes (q, k, v, out,\n"
    "grad_out, logsumexp, dq, dk, dv), then its captures, and is checked as\n"
    "the backward: dQ, dK and dV against float64 gradients (CPU), timed at\n"
    "2.5 times the forward's FLOPs.\n"
    "\n"
    "  --function=NAME     the function to run (default: the first)\n"
    "  --batch=B           batch size (default 1)\n"
    "  --heads=Hq[:Hkv]    query and key/value heads, Hq a multiple of Hkv\n"
    "                      (default 4:4)\n"
    "  --q-len=M           query length (default 128)\n"
    "  --kv-len=N          key/value length (default 128)\n"
    "  --causal            the reference masks keys after the query\n"
    "  --window=W          kv <= q and q - kv <= W (0: none)\n"
    "                      (both default to what the bundle computes; given,\n"
    "                      they must agree with it)\n"
    "  --repeat=R          timed runs (default 10; 0: check only)\n"
    "  --rotate=K          copies of the inputs to time over (default: enough\n"
    "                      to defeat the L2 cache)\n"
    "  --reference=auto|cpu|gpu\n"
    "                      where the float64 reference runs (default auto)\n"
    "  --json              one JSON line instead of text\n"
    "  -h, --help          this help\n"
    "  --version           the version\n"
    "\n"
    "Options take their value as --opt=value or --opt value. Exit status: 0\n"
    "when the output is within tolerance, 1 when not, 2 on errors.\n";

/// `text` as an integer in [min, max] for option `--flag`; anything else
/// (not a number, trailing characters, out of range) is an error.
int64_t parseInteger(const std::string &flag, const std::string &text,
                     int64_t min, int64_t max = INT64_MAX) {
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ||
      *end != '\0')
    fail("--" + flag + " expects an integer, not '" + text + "'");
  if (errno == ERANGE || value > max)
    fail("--" + flag + "=" + text + " is out of range (at most " +
         std::to_string(max) + ")");
  if (value < min)
    fail("--" + flag + " must be " +
         (min == 1   ? std::string("positive")
          : min == 0 ? std::string("non-negative")
                     : "at least " + std::to_string(min)) +
         ", got " + text);
  return value;
}

} // namespace

Options attn_bundle_run::parseOptions(int argc, char **argv) {
  enum : int {
    Function = 256,
    Batch,
    Heads,
    QLen,
    KvLen,
    Window,
    Repeat,
    Rotate,
    Reference,
    Causal,
    Json,
    Version
  };
  static const struct option kOptions[] = {
      {"function", required_argument, nullptr, Function},
      {"batch", required_argument, nullptr, Batch},
      {"heads", required_argument, nullptr, Heads},
      {"q-len", required_argument, nullptr, QLen},
      {"kv-len", required_argument, nullptr, KvLen},
      {"window", required_argument, nullptr, Window},
      {"repeat", required_argument, nullptr, Repeat},
      {"rotate", required_argument, nullptr, Rotate},
      {"reference", required_argument, nullptr, Reference},
      {"causal", no_argument, nullptr, Causal},
      {"json", no_argument, nullptr, Json},
      {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, Version},
      {nullptr, 0, nullptr, 0}};
  Options o;
  std::vector<std::string> positional;
  // Our own messages, not getopt's: a leading ':' reports a missing value
  // as ':', and opterr = 0 keeps getopt quiet.
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", kOptions, nullptr)) != -1) {
    std::string value = optarg ? optarg : "";
    switch (c) {
    case Function:
      o.function = value;
      break;
    case Batch:
      o.batch = parseInteger("batch", value, 1);
      break;
    case Heads: {
      size_t colon = value.find(':');
      // The message tests and scripts know for any bad --heads.
      std::string bad = "sizes must be positive and Hq a multiple of Hkv, "
                        "not --heads=" +
                        value;
      o.hq = parseInteger("heads", value.substr(0, colon), INT64_MIN);
      o.hkv = colon == std::string::npos
                  ? o.hq
                  : parseInteger("heads", value.substr(colon + 1), INT64_MIN);
      if (o.hq <= 0 || o.hkv <= 0 || o.hq % o.hkv != 0)
        fail(bad);
      break;
    }
    case QLen:
      o.m = parseInteger("q-len", value, 1);
      break;
    case KvLen:
      o.n = parseInteger("kv-len", value, 1);
      break;
    case Window:
      o.window = parseInteger("window", value, 0);
      o.windowGiven = true;
      break;
    case Repeat:
      o.repeat = parseInteger("repeat", value, 0, INT_MAX);
      break;
    case Rotate:
      o.rotate = parseInteger("rotate", value, 0, INT_MAX);
      break;
    case Reference:
      o.reference = value;
      if (o.reference != "auto" && o.reference != "cpu" && o.reference != "gpu")
        fail("--reference must be auto, cpu or gpu, not '" + o.reference + "'");
      break;
    case Causal:
      o.causal = o.causalGiven = true;
      break;
    case Json:
      o.json = true;
      break;
    case 'h':
      std::printf("%s\n%s", kUsage, kHelp);
      std::exit(0);
    case Version:
      std::printf("attn-bundle-run %s\n", ATTN_VERSION);
      std::exit(0);
    case ':':
      fail("option '" + std::string(argv[optind - 1]) + "' needs a value");
    default: {
      // '?': optopt is a long option's code when it was given a value it
      // does not take, a short option's letter, or 0 when unknown.
      std::string given = argv[optind - 1];
      if (optopt >= Function)
        fail("option '" + given.substr(0, given.find('=')) +
             "' takes no value");
      fail("unknown option '" +
           (optopt ? "-" + std::string(1, static_cast<char>(optopt)) : given) +
           "'");
    }
    }
  }
  for (int i = optind; i < argc; ++i)
    positional.push_back(argv[i]);
  if (positional.empty())
    fail(std::string("no bundle given\n") + kUsage);
  if (positional.size() > 1)
    fail("expected one bundle, got '" + positional[0] + "' and '" +
         positional[1] + "'");
  o.bundle = positional[0];
  return o;
}
