//===- Variants.cpp -------------------------------------------------------===//

#include "AttnDialect/Execution/Variants.h"
#include "AttnDialect/Transforms/Computes.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir::attn;

namespace {

/// Splits "name:value" and parses the value as an integer or a float.
bool splitParam(llvm::StringRef text, llvm::StringRef name,
                llvm::StringRef &value) {
  if (!text.consume_front(name))
    return false;
  if (!text.consume_front(":"))
    return false;
  value = text;
  return !value.empty();
}

const char *kMaskArgs = "^bb0(%b: index, %h: index, %q: index, %kv: index):";
const char *kScoreArgs =
    "^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index):";

/// Block sizes are powers of two from 16 to 1024, as !attn.block_mask's.
llvm::Error checkBlockSize(int64_t block) {
  if (block >= 16 && block <= 1024 && (block & (block - 1)) == 0)
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::formatv("block sizes must be powers of two from 16 to 1024, not "
                    "{0}",
                    block)
          .str());
}

/// The mask_mod body of `spec.mask` (empty for none) and the captured
/// arguments it reads, appended to `captures`.
llvm::Error maskRegion(const VariantSpec &spec, std::string &captures,
                       std::string &maskBody) {
  llvm::StringRef param;
  llvm::StringRef mask = spec.mask;
  if (mask == "none") {
  } else if (splitParam(mask, "sliding-window", param)) {
    int64_t window;
    if (param.getAsInteger(10, window) || window <= 0)
      return llvm::createStringError("--mask=sliding-window:W needs W > 0");
    // FlexAttention's sliding window: kv <= q and q - kv <= W.
    maskBody = llvm::formatv(R"(
        %w = arith.constant {0} : index
        %causal = arith.cmpi uge, %q, %kv : index
        %d = arith.subi %q, %kv : index
        %near = arith.cmpi ule, %d, %w : index
        %keep = arith.andi %causal, %near : i1
        attn.yield %keep : i1)",
                             window);
  } else if (mask == "document") {
    // Causal within documents; document ids of each position are captured.
    captures += ", %doc: tensor<?xi32>";
    maskBody = R"(
        %dq = tensor.extract %doc[%q] : tensor<?xi32>
        %dk = tensor.extract %doc[%kv] : tensor<?xi32>
        %same = arith.cmpi eq, %dq, %dk : i32
        %causal = arith.cmpi uge, %q, %kv : index
        %keep = arith.andi %same, %causal : i1
        attn.yield %keep : i1)";
  } else if (splitParam(mask, "prefix", param)) {
    int64_t prefix;
    if (param.getAsInteger(10, prefix) || prefix < 0)
      return llvm::createStringError("--mask=prefix:P needs P >= 0");
    // FlexAttention's prefix LM: kv <= P, or kv <= q.
    maskBody = llvm::formatv(R"(
        %p = arith.constant {0} : index
        %inPrefix = arith.cmpi ule, %kv, %p : index
        %causal = arith.cmpi uge, %q, %kv : index
        %keep = arith.ori %inPrefix, %causal : i1
        attn.yield %keep : i1)",
                             prefix);
  } else if (splitParam(mask, "jagged", param)) {
    int64_t prefix;
    if (param.getAsInteger(10, prefix) || prefix < 0)
      return llvm::createStringError("--mask=jagged:P needs P >= 0");
    // FlexAttention's jagged sequences: packed sequences, `seq` the sequence
    // of each position and `starts` each sequence's first position; inside
    // a sequence a prefix LM on the sequence's own positions (P = 0:
    // causal).
    captures += ", %seq: tensor<?xi32>, %starts: tensor<?xi32>";
    if (spec.fillHints)
      captures += " {attn.fill = \"run-starts\"}";
    maskBody = llvm::formatv(R"(
        %sq = tensor.extract %seq[%q] : tensor<?xi32>
        %sk = tensor.extract %seq[%kv] : tensor<?xi32>
        %same = arith.cmpi eq, %sq, %sk : i32
        %sqi = arith.index_cast %sq : i32 to index
        %ski = arith.index_cast %sk : i32 to index
        %q0 = tensor.extract %starts[%sqi] : tensor<?xi32>
        %k0 = tensor.extract %starts[%ski] : tensor<?xi32>
        %q0i = arith.index_cast %q0 : i32 to index
        %k0i = arith.index_cast %k0 : i32 to index
        %ql = arith.subi %q, %q0i : index
        %kl = arith.subi %kv, %k0i : index
        %p = arith.constant {0} : index
        %inPrefix = arith.cmpi ule, %kl, %p : index
        %causal = arith.cmpi uge, %ql, %kl : index
        %inner = arith.ori %inPrefix, %causal : i1
        %keep = arith.andi %same, %inner : i1
        attn.yield %keep : i1)",
                             prefix);
  } else if (mask.starts_with("sasa:") || mask.starts_with("natten:")) {
    // Neighbourhood attention on a canvas of `width` columns, the sequence
    // read row by row: SASA keeps the K x K window centred on the query;
    // NATTEN clamps the window's centre inside a `height` x `width` canvas,
    // so every query sees K x K keys.
    bool natten = mask.starts_with("natten:");
    llvm::SmallVector<llvm::StringRef> fields;
    mask.drop_front(natten ? 7 : 5).split(fields, ':');
    llvm::SmallVector<int64_t> values;
    for (llvm::StringRef field : fields) {
      int64_t value;
      if (field.getAsInteger(10, value) || value <= 0)
        break;
      values.push_back(value);
    }
    int64_t height = natten && values.size() == 3 ? values[0] : 0;
    if (values.size() != fields.size() || values.size() != (natten ? 3 : 2) ||
        (natten &&
         (2 * (values[2] / 2) >= height || 2 * (values[2] / 2) >= values[1])))
      return llvm::createStringError(
          natten ? "--mask=natten:H:W:K needs positive H, W and K, with "
                   "the window, 2 (K / 2) + 1 wide, inside H x W"
                 : "--mask=sasa:W:K needs positive W and K");
    int64_t width = values[natten ? 1 : 0], half = values.back() / 2;
    std::string centre = R"(
        %cx = arith.divui %q, %w : index
        %cy = arith.remui %q, %w : index)";
    if (natten)
      centre = llvm::formatv(R"(
        %qx = arith.divui %q, %w : index
        %qy = arith.remui %q, %w : index
        %lastx = arith.constant {0} : index
        %lasty = arith.constant {1} : index
        %lx = arith.maxui %qx, %r : index
        %ly = arith.maxui %qy, %r : index
        %cx = arith.minui %lx, %lastx : index
        %cy = arith.minui %ly, %lasty : index)",
                             height - 1 - half, width - 1 - half);
    // |c - k| <= r as c <= k + r and k <= c + r (no signed arithmetic).
    maskBody = llvm::formatv(R"(
        %w = arith.constant {0} : index
        %r = arith.constant {1} : index{2}
        %kx = arith.divui %kv, %w : index
        %ky = arith.remui %kv, %w : index
        %kxr = arith.addi %kx, %r : index
        %cxr = arith.addi %cx, %r : index
        %kyr = arith.addi %ky, %r : index
        %cyr = arith.addi %cy, %r : index
        %x0 = arith.cmpi ule, %cx, %kxr : index
        %x1 = arith.cmpi ule, %kx, %cxr : index
        %y0 = arith.cmpi ule, %cy, %kyr : index
        %y1 = arith.cmpi ule, %ky, %cyr : index
        %x = arith.andi %x0, %x1 : i1
        %y = arith.andi %y0, %y1 : i1
        %keep = arith.andi %x, %y : i1
        attn.yield %keep : i1)",
                             width, half, centre);
  } else {
    return llvm::createStringError(
        "--mask must be none, sliding-window:W, document, prefix:P, "
        "jagged:P, sasa:W:K or natten:H:W:K, not '" +
        spec.mask + "'");
  }

  return llvm::Error::success();
}

} // namespace

llvm::Expected<std::string> mlir::attn::variantSource(const VariantSpec &spec) {
  if (spec.dtype != "f32" && spec.dtype != "f16" && spec.dtype != "bf16")
    return llvm::createStringError("--dtype must be f32, f16 or bf16, not '" +
                                   spec.dtype + "'");
  int64_t dv = spec.valueDim ? spec.valueDim : spec.headDim;
  std::string t = spec.dtype;
  struct {
    const char *flag;
    int64_t size;
  } sizes[] = {{"--batch", spec.batch},
               {"--heads (Hq)", spec.queryHeads},
               {"--heads (Hkv)", spec.kvHeads},
               {"--q-len", spec.queryLen},
               {"--kv-len", spec.kvLen}};
  for (auto size : sizes)
    if (size.size == 0 || size.size < -1)
      return llvm::createStringError(
          llvm::formatv("{0} must be positive (or dynamic), not {1}", size.flag,
                        size.size)
              .str());
  if (spec.queryHeads > 0 && spec.kvHeads > 0 &&
      spec.queryHeads % spec.kvHeads != 0)
    return llvm::createStringError(
        llvm::formatv("--heads={0}:{1}: Hq must be a multiple of Hkv",
                      spec.queryHeads, spec.kvHeads)
            .str());
  auto dim = [](int64_t size) {
    return size > 0 ? std::to_string(size) : std::string("?");
  };
  std::string b = dim(spec.batch), hq = dim(spec.queryHeads),
              hkv = dim(spec.kvHeads), m = dim(spec.queryLen),
              n = dim(spec.kvLen);
  std::string qType =
      llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", b, hq, m, spec.headDim, t);
  std::string kType =
      llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", b, hkv, n, spec.headDim, t);
  std::string vType =
      llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", b, hkv, n, dv, t);
  std::string oType =
      llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", b, hq, m, dv, t);
  std::string lseType = llvm::formatv("tensor<{0}x{1}x{2}xf32>", b, hq, m);
  // The scale is an f32 attribute: it must stay finite and non-zero there.
  float scale32 = static_cast<float>(spec.scale);
  if (!std::isfinite(spec.scale) || spec.scale < 0 || !std::isfinite(scale32) ||
      (spec.scale > 0 && scale32 == 0))
    return llvm::createStringError(
        "--scale must be a positive number that f32 holds (or 0 for "
        "1/sqrt(D))");

  std::string captures, maskBody, scoreBody;
  if (llvm::Error error = maskRegion(spec, captures, maskBody))
    return std::move(error);
  if ((!spec.traceMaskBody.empty() && spec.mask != "none") ||
      (!spec.traceScoreBody.empty() && spec.scoreMod != "none"))
    return llvm::createStringError(
        "a traced region replaces a built-in one, which must be none");
  maskBody = spec.traceMaskBody.empty() ? maskBody : spec.traceMaskBody;
  scoreBody = spec.traceScoreBody.empty() ? scoreBody : spec.traceScoreBody;
  captures += spec.traceCaptures;
  llvm::StringRef param;
  llvm::StringRef mask = spec.mask, scoreMod = spec.scoreMod;
  if (scoreMod == "none") {
  } else if (scoreMod == "alibi") {
    // FlexAttention's ALiBi: score + slope[h] * (q - kv), per-head slopes
    // captured (the notebook's are 2^(-8 (h + 1) / H)).
    captures += ", %slopes: tensor<?xf32>";
    scoreBody = R"(
        %slope = tensor.extract %slopes[%h] : tensor<?xf32>
        %qi = arith.index_cast %q : index to i64
        %ki = arith.index_cast %kv : index to i64
        %d = arith.subi %qi, %ki : i64
        %df = arith.sitofp %d : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %r = arith.addf %s, %bias : f32
        attn.yield %r : f32)";
  } else if (splitParam(scoreMod, "softcap", param)) {
    double cap;
    if (param.getAsDouble(cap) || !(cap > 0) ||
        !std::isfinite(static_cast<float>(cap)) || static_cast<float>(cap) == 0)
      return llvm::createStringError(
          "--score-mod=softcap:C needs a C > 0 that f32 holds");
    // Gemma 2's soft-capping: C * tanh(score / C).
    scoreBody = llvm::formatv(R"(
        %c = arith.constant {0:e8} : f32
        %x = arith.divf %s, %c : f32
        %t = math.tanh %x : f32
        %r = arith.mulf %t, %c : f32
        attn.yield %r : f32)",
                              cap);
  } else if (scoreMod == "relative") {
    // Relative position bias: score + (q - kv).
    scoreBody = R"(
        %qi = arith.index_cast %q : index to i64
        %ki = arith.index_cast %kv : index to i64
        %d = arith.subi %qi, %ki : i64
        %df = arith.sitofp %d : i64 to f32
        %r = arith.addf %s, %df : f32
        attn.yield %r : f32)";
  } else if (scoreMod == "checkerboard") {
    // FlexAttention's checkerboard: halve scores where |q - kv| is odd,
    // keep them where it is even (q - kv wraps, which keeps its parity).
    scoreBody = R"(
        %d = arith.subi %q, %kv : index
        %c2 = arith.constant 2 : index
        %r2 = arith.remui %d, %c2 : index
        %c0 = arith.constant 0 : index
        %even = arith.cmpi eq, %r2, %c0 : index
        %half = arith.constant 0.5 : f32
        %halved = arith.mulf %s, %half : f32
        %r = arith.select %even, %s, %halved : f32
        attn.yield %r : f32)";
  } else {
    return llvm::createStringError(
        "--score-mod must be none, alibi, softcap:C, relative or "
        "checkerboard, not '" +
        spec.scoreMod + "'");
  }

  std::string outs = "%out";
  std::string args =
      llvm::formatv("%query: {0}, %key: {1}, %value: {2}, %out: {3}", qType,
                    kType, vType, oType);
  std::string results = oType, outTypes = oType;
  if (spec.logsumexp) {
    args += ", %logsumexp: " + lseType;
    outs += ", %logsumexp";
    outTypes += ", " + lseType;
    results += ", " + lseType;
  }
  args += captures;
  std::string blockMask, blockMaskArgs, blockMaskUse;
  if (spec.givenBlockMask) {
    int64_t block = spec.givenBlockMask;
    if (llvm::Error error = checkBlockSize(block))
      return std::move(error);
    if (maskBody.empty())
      return llvm::createStringError("a given block mask needs a mask");
    std::string maskType =
        llvm::formatv("!attn.block_mask<q_block = {0}, kv_block = {0}>", block);
    // One block mask for every batch and head, as FlexAttention's B = H =
    // None: the runtime checks the static 1s. The backward's dK/dV kernel
    // walks the q side too.
    const char *counts = "tensor<1x1x?xi32>", *indices = "tensor<1x1x?x?xi32>";
    std::string sides;
    for (const char *side : {"kv", "q"}) {
      if (side[0] == 'q' && !spec.backward)
        break;
      blockMaskArgs += llvm::formatv(
          ", %{2}_num_blocks: {0}, %{2}_indices: {1}, %full_{2}_num_blocks: "
          "{0}, %full_{2}_indices: {1}",
          counts, indices, side);
      sides += llvm::formatv(R"(
      {2}(%{2}_num_blocks, %{2}_indices : {0}, {1})
      full_{2}(%full_{2}_num_blocks, %full_{2}_indices : {0}, {1}))",
                             counts, indices, side);
    }
    blockMask = llvm::formatv(R"(
  %bm = attn.make_block_mask{0} : {1})",
                              sides, maskType);
    blockMaskUse = " block_mask(%bm : " + maskType + ")";
  }

  args += blockMaskArgs;
  std::string regions;
  if (!scoreBody.empty())
    regions += std::string("\n      score_mod {\n      ") + kScoreArgs +
               scoreBody + "\n      }";
  if (!maskBody.empty())
    regions += std::string("\n      mask_mod {\n      ") + kMaskArgs +
               maskBody + "\n      }";

  std::string attrs;
  if (spec.causal)
    attrs += "causal";
  if (spec.scale > 0)
    attrs += (attrs.empty() ? "" : ", ") +
             llvm::formatv("scale = {0:e8} : f32", spec.scale).str();
  // The built-ins' names travel with the op into the kernel bundle
  // (attn.computes), so that runners can tell which mask a kernel applies.
  auto addName = [&](llvm::StringRef attr, llvm::StringRef name) {
    attrs += (attrs.empty() ? "" : ", ") +
             llvm::formatv("{0} = \"{1}\"", attr, name).str();
  };
  if (!maskBody.empty() && spec.traceMaskBody.empty())
    addName(kMaskModNameAttrName, mask);
  if (!scoreBody.empty() && spec.traceScoreBody.empty())
    addName(kScoreModNameAttrName, scoreMod);
  if (!attrs.empty())
    attrs = " {" + attrs + "}";

  if (spec.captureGrads && !spec.backward)
    return llvm::createStringError("capture gradients need the backward");
  if (spec.backward) {
    // The built-ins' one float capture is ALiBi's slopes.
    std::string wrt, gradArgs, grads, gradTypes;
    unsigned wrtCount = spec.captureGrads ? 1 : 0;
    if (!spec.traceWrt.empty()) {
      if (spec.captureGrads)
        return llvm::createStringError(
            "capture gradients are alibi's or a traced region's, not both");
      std::string names, types;
      for (auto [i, capture] : llvm::enumerate(spec.traceWrt)) {
        const auto &[name, type] = capture;
        if (spec.traceCaptures.find("%" + name + ": " + type) ==
            std::string::npos)
          return llvm::createStringError("capture gradient of %" + name +
                                         ": no such captured argument");
        names += (i ? ", %" : "%") + name;
        types += (i ? ", " : "") + type;
        gradArgs += llvm::formatv(", %grad_{0}: {1}", name, type).str();
        grads += ", %grad_" + name;
        gradTypes += ", " + type;
      }
      wrt = llvm::formatv("\n      wrt({0} : {1})", names, types);
      wrtCount = spec.traceWrt.size();
    }
    if (spec.captureGrads) {
      if (spec.scoreMod != "alibi")
        return llvm::createStringError(
            "capture gradients need a score_mod that reads a float tensor "
            "(alibi), not '" +
            spec.scoreMod + "'");
      const char *slopesType = "tensor<?xf32>";
      wrt = llvm::formatv("\n      wrt(%slopes : {0})", slopesType);
      gradArgs = llvm::formatv(", %grad_slopes: {0}", slopesType);
      grads = ", %grad_slopes";
      gradTypes = llvm::formatv(", {0}", slopesType);
    }
    std::string resultTypes =
        llvm::formatv("{0}, {1}, {2}{3}", qType, kType, vType, gradTypes);
    unsigned results = 3 + wrtCount;
    std::string returned = "%r#0, %r#1, %r#2";
    for (unsigned i = 3; i < results; ++i)
      returned += ", %r#" + std::to_string(i);
    return llvm::formatv(
               R"(func.func @attention_grad(%query: {0}, %key: {1}, %value: {2}, %out: {3}, %grad_out: {3}, %logsumexp: {4}, %grad_query: {0}, %grad_key: {1}, %grad_value: {2}{8}{5}) -> ({10}) {{{14}
  %r:{11} = attn.attention_grad ins(%query, %key, %value, %out, %grad_out, %logsumexp : {0}, {1}, {2}, {3}, {3}, {4}){9}
      outs(%grad_query, %grad_key, %grad_value{12} : {10}){15}{6}{7}
      -> {10}
  return {13} : {10}
}
)",
               qType, kType, vType, oType, lseType, captures + blockMaskArgs,
               attrs, regions, gradArgs, wrt, resultTypes, results, grads,
               returned, blockMask, blockMaskUse)
        .str();
  }

  bool twoResults = spec.logsumexp;
  return llvm::formatv(R"(func.func @attention({0}) -> ({1}) {{{12}
  {2} = attn.attention ins(%query, %key, %value : {3}, {4}, {5})
      outs({6} : {7}){13}{8}{9}
      -> {10}
  return {11} : {10}
}
)",
                       args, results, twoResults ? "%r:2" : "%r", qType, kType,
                       vType, outs, outTypes, attrs, regions, results,
                       twoResults ? "%r#0, %r#1" : "%r", blockMask,
                       blockMaskUse)
      .str();
}

llvm::Expected<std::string> mlir::attn::blockMaskSource(const VariantSpec &spec,
                                                        int64_t qBlock,
                                                        int64_t kvBlock) {
  struct {
    const char *name;
    int64_t size;
  } sizes[] = {{"batch", spec.batch},
               {"heads", spec.queryHeads},
               {"q_len", spec.queryLen},
               {"kv_len", spec.kvLen}};
  for (auto size : sizes)
    if (size.size <= 0)
      return llvm::createStringError(
          llvm::formatv("a block mask needs a positive {0}, not {1}", size.name,
                        size.size)
              .str());
  for (int64_t block : {qBlock, kvBlock})
    if (llvm::Error error = checkBlockSize(block))
      return std::move(error);
  std::string captures, maskBody;
  if (llvm::Error error = maskRegion(spec, captures, maskBody))
    return std::move(error);
  if (maskBody.empty())
    return llvm::createStringError("a block mask needs a mask, not 'none'");
  int64_t qBlocks = (spec.queryLen + qBlock - 1) / qBlock;
  int64_t kvBlocks = (spec.kvLen + kvBlock - 1) / kvBlock;
  std::string maskType = llvm::formatv(
      "!attn.block_mask<q_block = {0}, kv_block = {1}>", qBlock, kvBlock);
  std::string args, results, fields, returned;
  const char *names[] = {
      "kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
      "q_num_blocks",  "q_indices",  "full_q_num_blocks",  "full_q_indices"};
  for (auto [i, name] : llvm::enumerate(names)) {
    // kv-side lists are [B, H, QB(, KB)], q-side ones [B, H, KB(, QB)].
    bool kvSide = i < 4, indices = i % 2 == 1;
    std::string type = llvm::formatv(
        "tensor<{0}x{1}x{2}{3}xi32>", spec.batch, spec.queryHeads,
        kvSide ? qBlocks : kvBlocks,
        indices ? "x" + std::to_string(kvSide ? kvBlocks : qBlocks) : "");
    args += llvm::formatv("{0}%{1}: {2}", i ? ", " : "", name, type);
    results += llvm::formatv("{0}{1}", i ? ", " : "", type);
    fields += llvm::formatv(R"(
  %f{0} = attn.block_mask_field {1} of %bm : {2} -> {3}
  %r{0} = linalg.copy ins(%f{0} : {3}) outs(%{1} : {3}) -> {3})",
                            i, name, maskType, type);
    returned += llvm::formatv("{0}%r{1}", i ? ", " : "", i);
  }
  return llvm::formatv(R"(func.func @block_mask({0}{1}) -> ({2}) {{
  %batch = arith.constant {3} : index
  %heads = arith.constant {4} : index
  %q_len = arith.constant {5} : index
  %kv_len = arith.constant {6} : index
  %bm = attn.create_block_mask batch(%batch) heads(%heads) q_len(%q_len)
      kv_len(%kv_len)
      : {7} mask_mod {{
      {8}{9}
      }{10}
  return {11} : {2}
}
)",
                       args, captures, results, spec.batch, spec.queryHeads,
                       spec.queryLen, spec.kvLen, maskType, kMaskArgs, maskBody,
                       fields, returned)
      .str();
}

llvm::Expected<std::string>
mlir::attn::softmaxSource(const std::string &dtype) {
  if (dtype != "f32" && dtype != "f16" && dtype != "bf16")
    return llvm::createStringError("--dtype must be f32, f16 or bf16, not '" +
                                   dtype + "'");
  return llvm::formatv(
             R"(func.func @softmax(%x: tensor<?x?x{0}>, %y: tensor<?x?x{0}>)
    -> tensor<?x?x{0}> {{
  %r = attn.softmax ins(%x : tensor<?x?x{0}>) outs(%y : tensor<?x?x{0}>)
      -> tensor<?x?x{0}>
  return %r : tensor<?x?x{0}>
}
)",
             dtype)
      .str();
}
