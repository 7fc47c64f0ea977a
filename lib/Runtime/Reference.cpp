//===- Reference.cpp - float64 reference of attention on the CPU ----------===//

#include "AttnRuntime/Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace attn_runtime;

/// Whether `p` keeps (b, h, i, j): its causal flag, window and mask_mod
/// (`position` is scratch space for its arguments). False, with `why`,
/// where the mask_mod is undefined.
static bool keeps(const ReferenceAttention &p, int64_t b, int64_t h,
                  int64_t i, int64_t j, std::vector<Scalar> &position,
                  bool &visible, std::string &why) {
  visible = !p.causal || (j <= i && (p.window <= 0 || i - j <= p.window));
  if (!p.maskMod)
    return true;
  position = {Scalar::ofInt(b), Scalar::ofInt(h), Scalar::ofInt(i),
              Scalar::ofInt(j)};
  Scalar value;
  if (!evaluateRegion(*p.maskMod, position, p.arguments, value, why))
    return false;
  visible = visible && value.i != 0;
  return true;
}

bool attn_runtime::referenceAttention(const ReferenceAttention &p,
                                      ReferenceResult &result,
                                      std::string &error) {
  int64_t batches = p.q->shape()[0], heads = p.q->shape()[1],
          rows = p.q->shape()[2], d = p.q->shape()[3];
  int64_t kvHeads = p.k->shape()[1], n = p.k->shape()[2], dv = p.v->shape()[3];
  int64_t group = heads / kvHeads;
  double negInf = -std::numeric_limits<double>::infinity();
  auto at = [&](const char *region, int64_t b, int64_t h, int64_t i, int64_t j,
                const std::string &why) {
    error = std::string(region) + " at (b, h, q, kv) = (" + std::to_string(b) +
            ", " + std::to_string(h) + ", " + std::to_string(i) + ", " +
            std::to_string(j) + "): " + why;
    return false;
  };

  // Decode the inputs once; the loops below touch each element many times.
  auto decode = [](const HostTensor &t) {
    std::vector<double> values(t.numElements());
    for (int64_t i = 0; i < t.numElements(); ++i)
      values[i] = t.get(i);
    return values;
  };
  std::vector<double> qs = decode(*p.q), ks = decode(*p.k), vs = decode(*p.v);

  result.output.assign(batches * heads * rows * dv, 0.0);
  result.logsumexp.assign(batches * heads * rows, negInf);
  result.visiblePairs = 0;
  std::vector<double> scores(n);
  std::vector<char> keep(n);
  bool emulate =
      p.emulate == ElementKind::F16 || p.emulate == ElementKind::BF16;
  result.emulated.assign(emulate ? batches * heads * rows * dv : 0, 0.0);
  std::vector<float> weights(emulate ? n : 0);
  // One row of the float32 kernel: the row's scores (`scores`, `keep`)
  // rounded to float32, P rounded to the input type, the output stored in
  // it; `values` is the row's V.
  auto emulateRow = [&](int64_t at, const double *values) {
    float top = -std::numeric_limits<float>::infinity(), total = 0;
    for (int64_t j = 0; j < n; ++j)
      if (keep[j])
        top = std::max(top, static_cast<float>(scores[j]));
    for (int64_t j = 0; j < n; ++j) {
      float w = keep[j] ? std::exp(static_cast<float>(scores[j]) - top) : 0.0f;
      total += w;
      weights[j] = static_cast<float>(roundTo(p.emulate, w));
    }
    for (int64_t c = 0; c < dv; ++c) {
      float sum = 0;
      for (int64_t j = 0; j < n; ++j)
        sum += weights[j] * static_cast<float>(values[j * dv + c]);
      result.emulated[at + c] = roundTo(p.emulate, sum / total);
    }
  };
  std::vector<Scalar> position(4), scoreArgs(5);
  Scalar value;
  std::string why;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t hk = h / group;
      for (int64_t i = 0; i < rows; ++i) {
        double max = negInf;
        // A NaN score that no mask removes makes the row's softmax NaN, as
        // in PyTorch (std::max would silently skip it).
        bool nanRow = false;
        for (int64_t j = 0; j < n; ++j) {
          bool visible;
          if (!keeps(p, b, h, i, j, position, visible, why))
            return at("mask_mod", b, h, i, j, why);
          keep[j] = visible;
          if (p.visit)
            p.visit(b, h, i, j, visible);
          if (!visible && !p.scoreMod)
            continue;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += qs[((b * heads + h) * rows + i) * d + c] *
                   ks[((b * kvHeads + hk) * n + j) * d + c];
          double s = p.scale * dot;
          if (p.scoreMod) {
            scoreArgs = {Scalar::ofFloat(s), Scalar::ofInt(b), Scalar::ofInt(h),
                         Scalar::ofInt(i), Scalar::ofInt(j)};
            if (!evaluateRegion(*p.scoreMod, scoreArgs, p.arguments, value,
                                why))
              return at("score_mod", b, h, i, j, why);
            s = value.f;
          }
          if (!visible)
            continue;
          ++result.visiblePairs;
          scores[j] = s;
          max = std::max(max, s);
          nanRow |= std::isnan(s);
        }
        int64_t row = (b * heads + h) * rows + i;
        if (nanRow) {
          double nan = std::numeric_limits<double>::quiet_NaN();
          std::fill_n(&result.output[row * dv], dv, nan);
          if (emulate)
            std::fill_n(&result.emulated[row * dv], dv, nan);
          result.logsumexp[row] = nan;
          continue;
        }
        if (max == negInf)
          continue; // fully masked row: output 0, logsumexp -inf
        if (emulate)
          emulateRow(row * dv, &vs[(b * kvHeads + hk) * n * dv]);
        double sum = 0;
        for (int64_t j = 0; j < n; ++j)
          if (keep[j])
            sum += std::exp(scores[j] - max);
        double *out = &result.output[row * dv];
        for (int64_t j = 0; j < n; ++j) {
          if (!keep[j])
            continue;
          double weight = std::exp(scores[j] - max) / sum;
          for (int64_t c = 0; c < dv; ++c)
            out[c] += weight * vs[((b * kvHeads + hk) * n + j) * dv + c];
        }
        result.logsumexp[row] = max + std::log(sum);
      }
    }
  return true;
}

bool attn_runtime::referenceAttentionGrad(const ReferenceAttention &p,
                                          const HostTensor &o,
                                          const HostTensor &dO,
                                          ReferenceGradients &grads,
                                          std::string &error,
                                          const std::vector<int64_t> &wrt) {
  int64_t batches = p.q->shape()[0], heads = p.q->shape()[1],
          rows = p.q->shape()[2], d = p.q->shape()[3];
  int64_t kvHeads = p.k->shape()[1], n = p.k->shape()[2], dv = p.v->shape()[3];
  int64_t group = heads / kvHeads;
  auto decode = [](const HostTensor &t) {
    std::vector<double> values(t.numElements());
    for (int64_t i = 0; i < t.numElements(); ++i)
      values[i] = t.get(i);
    return values;
  };
  std::vector<double> qs = decode(*p.q), ks = decode(*p.k), vs = decode(*p.v),
                      os = decode(o), dos = decode(dO);
  grads.dq.assign(qs.size(), 0.0);
  grads.dk.assign(ks.size(), 0.0);
  grads.dv.assign(vs.size(), 0.0);
  // The score_mod's reads of each wrt tensor: (op number, wrt number).
  std::vector<std::pair<int64_t, size_t>> reads;
  grads.wrt.clear();
  grads.wrtMagnitudes.clear();
  for (size_t w = 0; w < wrt.size(); ++w) {
    const HostTensor *tensor = wrt[w] < static_cast<int64_t>(p.arguments.size())
                                   ? p.arguments[wrt[w]]
                                   : nullptr;
    if (!tensor) {
      error = "wrt argument #" + std::to_string(wrt[w]) + " is not given";
      return false;
    }
    grads.wrt.emplace_back(tensor->numElements(), 0.0);
    grads.wrtMagnitudes.emplace_back(tensor->numElements(), 0.0);
    for (size_t k = 0; p.scoreMod && k < p.scoreMod->ops.size(); ++k)
      if (p.scoreMod->ops[k].kind == RegionOp::Kind::Extract &&
          p.scoreMod->ops[k].tensor == wrt[w])
        reads.emplace_back(k, w);
  }
  std::vector<Scalar> values;
  std::vector<double> scores(n), slopes(n), rawScores(n);
  std::vector<char> keep(n);
  std::vector<Scalar> args(5), position(4);
  Scalar value;
  std::string why;
  auto at = [&](const char *region, int64_t b, int64_t h, int64_t i, int64_t j) {
    error = std::string(region) + " at (b, h, q, kv) = (" + std::to_string(b) +
            ", " + std::to_string(h) + ", " + std::to_string(i) + ", " +
            std::to_string(j) + "): " + why;
    return false;
  };
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t hk = h / group;
      const double *kBase = &ks[(b * kvHeads + hk) * n * d];
      const double *vBase = &vs[(b * kvHeads + hk) * n * dv];
      for (int64_t i = 0; i < rows; ++i) {
        int64_t row = (b * heads + h) * rows + i;
        const double *qRow = &qs[row * d], *oRow = &os[row * dv],
                     *doRow = &dos[row * dv];
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          bool visible;
          if (!keeps(p, b, h, i, j, position, visible, why))
            return at("mask_mod", b, h, i, j);
          keep[j] = visible;
          if (!visible)
            continue;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += qRow[c] * kBase[j * d + c];
          double s = p.scale * dot;
          rawScores[j] = s;
          slopes[j] = 1;
          if (p.scoreMod) {
            // score_mod(s) and its central difference at s +- step.
            double step = 1e-6 * std::max(1.0, std::fabs(s));
            double at3[3];
            const double points[3] = {s, s + step, s - step};
            for (int e = 0; e < 3; ++e) {
              args = {Scalar::ofFloat(points[e]), Scalar::ofInt(b),
                      Scalar::ofInt(h), Scalar::ofInt(i), Scalar::ofInt(j)};
              if (!evaluateRegion(*p.scoreMod, args, p.arguments, value, why))
                return at("score_mod", b, h, i, j);
              at3[e] = value.f;
            }
            s = at3[0];
            slopes[j] = (at3[1] - at3[2]) / (2 * step);
          }
          scores[j] = s;
          max = std::isnan(s) ? s : std::max(max, s);
        }
        if (max == -std::numeric_limits<double>::infinity())
          continue; // fully masked row: no gradient
        double sum = 0;
        for (int64_t j = 0; j < n; ++j)
          if (keep[j])
            sum += std::exp(scores[j] - max);
        double delta = 0, deltaSize = 0;
        for (int64_t c = 0; c < dv; ++c) {
          delta += doRow[c] * oRow[c];
          deltaSize += std::fabs(doRow[c] * oRow[c]);
        }
        for (int64_t j = 0; j < n; ++j) {
          if (!keep[j])
            continue;
          double prob = std::exp(scores[j] - max) / sum;
          double dp = 0, dpSize = 0;
          for (int64_t c = 0; c < dv; ++c) {
            dp += doRow[c] * vBase[j * dv + c];
            dpSize += std::fabs(doRow[c] * vBase[j * dv + c]);
            grads.dv[((b * kvHeads + hk) * n + j) * dv + c] += prob * doRow[c];
          }
          // d loss / d score_mod(s), then through the score_mod's reads of
          // the wrt tensors (central differences of what each reads).
          double dsMod = prob * (dp - delta);
          // dP - Delta cancels: rounding in it scales with the products
          // summed, which size each term (HostTensor.h, relativeError).
          double dsModSize = prob * (dpSize + deltaSize);
          if (!reads.empty() && dsModSize != 0) {
            args = {Scalar::ofFloat(rawScores[j]), Scalar::ofInt(b),
                    Scalar::ofInt(h), Scalar::ofInt(i), Scalar::ofInt(j)};
            RegionNudge record;
            record.values = &values;
            if (!evaluateRegion(*p.scoreMod, args, p.arguments, value, why,
                                record))
              return at("score_mod", b, h, i, j);
            // The nudged evaluations below leave `values` as recorded here.
            for (const auto &[k, w] : reads) {
              const RegionOp &read = p.scoreMod->ops[k];
              const HostTensor &tensor = *p.arguments[read.tensor];
              int64_t flat = 0;
              for (size_t dim = 0; dim < read.operands.size(); ++dim)
                flat = flat * tensor.shape()[dim] + values[read.operands[dim]].i;
              double read0 = values[p.scoreMod->args.size() + k].f;
              double step = 1e-6 * std::max(1.0, std::fabs(read0));
              double ends[2];
              for (int e = 0; e < 2; ++e) {
                RegionNudge nudge;
                nudge.op = k;
                nudge.by = e == 0 ? step : -step;
                if (!evaluateRegion(*p.scoreMod, args, p.arguments, value, why,
                                    nudge))
                  return at("score_mod", b, h, i, j);
                ends[e] = value.f;
              }
              double term = dsMod * (ends[0] - ends[1]) / (2 * step);
              grads.wrt[w][flat] += term;
              grads.wrtMagnitudes[w][flat] +=
                  dsModSize * std::fabs((ends[0] - ends[1]) / (2 * step));
            }
          }
          double ds = dsMod * slopes[j] * p.scale;
          for (int64_t c = 0; c < d; ++c) {
            grads.dq[row * d + c] += ds * kBase[j * d + c];
            grads.dk[((b * kvHeads + hk) * n + j) * d + c] += ds * qRow[c];
          }
        }
      }
    }
  return true;
}
