// pyramidkv[:W] (PyramidKV, Cai et al. 2024; exact rule in docs/POLICIES-EXTRA.md): SnapKV's
// choice in every layer, under per-layer budgets that fall linearly from the first layer to the
// last with the same total as k per layer: the k - W states chosen per layer on average become
// 2(k - W) - m in layer 0 down to m = (k - W) / 20 in the last, apportioned in whole states.
#include <cmath>
#include <vector>

#include "kv/policies/snapkv.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr double kBeta = 20;  // the last layer keeps 1/beta of the mean chosen share

// Per-layer budgets summing to k x n_layer exactly: the linear shares rounded down, then one
// more state to the layers with the largest remainders (ties: the lower layer).
std::vector<int> pyramid_budgets(int k, int w, int n_layer) {
  std::vector<int> out(n_layer, k);
  if (n_layer <= 1 || k <= w) return out;
  const double mean = k - w;
  const double lo = mean / kBeta;
  const double hi = 2 * mean - lo;
  std::vector<double> share(n_layer);
  int64_t sum = 0;
  for (int l = 0; l < n_layer; ++l) {
    share[l] = hi - l * (hi - lo) / (n_layer - 1);
    out[l] = static_cast<int>(std::floor(share[l]));
    sum += out[l];
  }
  std::vector<int> order(n_layer);
  for (int l = 0; l < n_layer; ++l) order[l] = l;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return share[a] - out[a] > share[b] - out[b];
  });
  for (int64_t i = 0; i < int64_t{k - w} * n_layer - sum; ++i) ++out[order[i]];
  for (int& b : out) b += w;
  return out;
}

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "pyramidkv",
    .arg_name = "W",
    .help = "snapkv's choice under per-layer budgets falling linearly with depth, k per layer "
            "on average (W=32)",
    .arg_optional = true,
    .validate = [](int, std::optional<int> w) { return validate_snap_window(w); },
    .plan =
        [](const PolicyArgs& a) {
          const auto b = pyramid_budgets(a.budget, a.arg.value_or(kSnapWindow), a.n_layer);
          return LayerPlan{.budget = b[a.layer], .holds_prompt = true};
        },
    .examples = {"pyramidkv:8"},
    .make = [](const PolicyArgs& a) { return make_snapkv(a, SnapDecode::kWindow); },
});

}  // namespace
}  // namespace tova::kv
