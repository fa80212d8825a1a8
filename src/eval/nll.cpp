#include "eval/nll.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tova::eval {

void log_softmax(std::span<const float> logits, std::span<double> out) {
  double m = -std::numeric_limits<double>::infinity();
  for (float x : logits) m = std::max(m, static_cast<double>(x));
  double s = 0;
  for (float x : logits) s += std::exp(static_cast<double>(x) - m);
  const double lse = m + std::log(s);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - lse;
}

double kl_divergence(std::span<const double> logp, std::span<const double> logq) {
  double kl = 0;
  for (size_t i = 0; i < logp.size(); ++i) {
    const double p = std::exp(logp[i]);
    if (p == 0) continue;
    kl += p * (logp[i] - logq[i]);
  }
  return std::max(0.0, kl);
}

double kl_divergence(std::span<const double> p, std::span<const double> logp,
                     std::span<const double> logq) {
  double kl = 0;
  for (size_t i = 0; i < logp.size(); ++i) {
    if (p[i] == 0) continue;
    kl += p[i] * (logp[i] - logq[i]);
  }
  return std::max(0.0, kl);
}

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

MeanSe mean_and_se(std::span<const double> xs) {
  MeanSe r;
  const size_t n = xs.size();
  if (n == 0) return {std::nan(""), std::nan("")};
  double s = 0;
  for (double x : xs) s += x;
  r.mean = s / static_cast<double>(n);
  if (n < 2) {
    r.se = std::nan("");
    return r;
  }
  double ss = 0;
  for (double x : xs) ss += (x - r.mean) * (x - r.mean);
  r.se = std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
  return r;
}

Perplexity perplexity(std::span<const double> chunk_mean_nll) {
  const MeanSe m = mean_and_se(chunk_mean_nll);
  Perplexity p;
  p.mean_nll = m.mean;
  p.ppl = std::exp(m.mean);
  p.ppl_se = p.ppl * m.se;
  return p;
}

double quantile(std::vector<float>& xs, double q) {
  if (xs.empty()) return std::nan("");
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(xs.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, xs.size() - 1);
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(lo), xs.end());
  const double a = xs[lo];
  if (hi == lo) return a;
  // The next order statistic is the smallest element above position lo.
  const double b = *std::min_element(xs.begin() + static_cast<std::ptrdiff_t>(hi), xs.end());
  return a + (rank - static_cast<double>(lo)) * (b - a);
}

}  // namespace tova::eval
