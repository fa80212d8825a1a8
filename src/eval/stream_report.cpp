#include "eval/stream_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>


namespace tova::eval {

StreamCurve stream_curve(const ConfigResult& c, kv::PositionMode positions, int64_t window) {
  StreamCurve s;
  s.policy = c.policy;
  s.positions = positions;
  s.label = c.policy.bounded()
                ? fmt::format("{} k={} {}", c.policy.label(), c.policy.budget,
                              kv::position_mode_name(positions))
                : std::string("full");
  const std::vector<double>& nll = c.nll_by_position;
  s.n_predictions = static_cast<int64_t>(nll.size());
  window = std::max<int64_t>(1, window);
  double total = 0;
  for (int64_t w0 = 0; w0 < s.n_predictions; w0 += window) {
    const int64_t w1 = std::min(s.n_predictions, w0 + window);
    double sum = 0;
    for (int64_t i = w0; i < w1; ++i) sum += nll[i];
    total += sum;
    // Prediction i is made at position i (it predicts the token at i + 1).
    s.window_end.push_back(w1);
    s.window_ppl.push_back(std::exp(sum / static_cast<double>(w1 - w0)));
    s.cumulative_ppl.push_back(std::exp(total / static_cast<double>(w1)));
  }
  s.ppl = s.n_predictions > 0 ? std::exp(total / static_cast<double>(s.n_predictions)) : NAN;
  return s;
}

nlohmann::ordered_json stream_json(const std::vector<StreamCurve>& curves,
                                   const nlohmann::ordered_json& header) {
  nlohmann::ordered_json j = header;
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const StreamCurve& c : curves) {
    arr.push_back({{"label", c.label},
                   {"policy", c.policy.label()},
                   {"budget", c.policy.bounded() ? nlohmann::ordered_json(c.policy.budget)
                                                 : nlohmann::ordered_json()},
                   {"positions", kv::position_mode_name(c.positions)},
                   {"n_predictions", c.n_predictions},
                   {"ppl", c.ppl},
                   {"window_end", c.window_end},
                   {"window_ppl", c.window_ppl},
                   {"cumulative_ppl", c.cumulative_ppl}});
  }
  j["curves"] = arr;
  return j;
}

std::string stream_csv(const std::vector<StreamCurve>& curves) {
  std::string s = "label,policy,budget,positions,window_end,window_ppl,cumulative_ppl\n";
  for (const StreamCurve& c : curves) {
    for (size_t w = 0; w < c.window_end.size(); ++w) {
      s += fmt::format("{},{},{},{},{},{:.6f},{:.6f}\n", c.label, c.policy.label(),
                       c.policy.bounded() ? std::to_string(c.policy.budget) : "",
                       kv::position_mode_name(c.positions), c.window_end[w], c.window_ppl[w],
                       c.cumulative_ppl[w]);
    }
  }
  return s;
}

}  // namespace tova::eval
