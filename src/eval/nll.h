// The arithmetic of language-model evaluation: log-softmax, negative log-likelihood, KL
// divergence and the summary statistics of a sweep. Everything is computed in double from
// float logits, so the scores do not depend on how the logits were batched.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tova::eval {

// out[i] = logits[i] - log(sum_j exp(logits[j])), in double.
void log_softmax(std::span<const float> logits, std::span<double> out);

// -log p(target) from a row of log-probabilities.
inline double nll(std::span<const double> logp, int32_t target) { return -logp[target]; }

// KL(p || q) = sum_i p_i (log p_i - log q_i) from log-probabilities. Mathematically >= 0;
// rounding can make nearly equal distributions come out a hair below zero, so it is clamped.
// Terms with p_i == 0 (exp underflow) contribute nothing.
double kl_divergence(std::span<const double> logp, std::span<const double> logq);
// The same with p's probabilities given too (p_i = exp(logp_i)), for scoring many q against
// one p: bit-identical to the form above.
double kl_divergence(std::span<const double> p, std::span<const double> logp,
                     std::span<const double> logq);

// Index of the largest logit; ties go to the smallest index.
int32_t argmax(std::span<const float> logits);

struct MeanSe {
  double mean = 0;
  double se = 0;  // standard error of the mean: sample sd / sqrt(n); NaN when n < 2
};
MeanSe mean_and_se(std::span<const double> xs);

// Perplexity exp(mean) of per-chunk mean NLLs, with its standard error by the delta method:
// se(exp(m)) ~= exp(m) * se(m). Chunks hold equally many predictions, so the mean of chunk
// means is the mean over all predictions.
struct Perplexity {
  double mean_nll = 0;
  double ppl = 0;
  double ppl_se = 0;  // NaN with a single chunk
};
Perplexity perplexity(std::span<const double> chunk_mean_nll);

// The q-quantile (0 <= q <= 1) with linear interpolation between order statistics (numpy's
// default): rank q * (n - 1). NaN for an empty list. Reorders xs.
double quantile(std::vector<float>& xs, double q);

}  // namespace tova::eval
