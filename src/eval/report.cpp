#include "eval/report.h"

#include <fmt/format.h>

#include <cmath>

namespace tova::eval {

namespace {

nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}
nlohmann::ordered_json number(const std::optional<double>& v) {
  return v ? number(*v) : nlohmann::ordered_json(nullptr);
}
// Per-position and per-chunk curves are stored as float: enough digits, a third of the size.
nlohmann::ordered_json floats(const std::vector<double>& v) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (double x : v) a.push_back(static_cast<float>(x));
  return a;
}
std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : ""; }
std::string csv_number(const std::optional<double>& v) { return v ? csv_number(*v) : ""; }

}  // namespace

nlohmann::ordered_json sweep_json(const SweepResult& r, const nlohmann::ordered_json& header) {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const ConfigResult& c : r.configs) {
    results.push_back({
        {"policy", c.policy.label()},
        {"budget",
         c.policy.bounded() ? nlohmann::ordered_json(c.policy.budget) : nlohmann::ordered_json()},
        {"kv_type", c.kv_type.label()},
        {"ppl", number(c.ppl)},
        {"ppl_stderr", number(c.ppl_se)},
        {"mean_nll", number(c.mean_nll)},
        {"kl_mean", number(c.kl_mean)},
        {"kl_p99", number(c.kl_p99)},
        {"top1_agree", number(c.top1_agree)},
        {"dnll_vs_full", number(c.dnll_mean)},
        {"dnll_vs_full_stderr", number(c.dnll_se)},
        {"nll_by_position", floats(c.nll_by_position)},
        {"nll_by_chunk", floats(c.nll_by_chunk)},
    });
  }
  return {{"header", header}, {"results", results}};
}

std::string sweep_csv(const SweepResult& r) {
  std::string s =
      "policy,budget,kv_type,ppl,ppl_stderr,mean_nll,kl_mean,kl_p99,top1_agree,dnll_vs_full,"
      "dnll_vs_full_stderr\n";
  for (const ConfigResult& c : r.configs) {
    // "k=q8_0,v=f16" holds a comma: quoted.
    const std::string kv = c.kv_type.label();
    s += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", c.policy.label(),
                     c.policy.bounded() ? std::to_string(c.policy.budget) : "",
                     kv.find(',') == std::string::npos ? kv : "\"" + kv + "\"", csv_number(c.ppl),
                     csv_number(c.ppl_se), csv_number(c.mean_nll), csv_number(c.kl_mean),
                     csv_number(c.kl_p99), csv_number(c.top1_agree), csv_number(c.dnll_mean),
                     csv_number(c.dnll_se));
  }
  return s;
}

nlohmann::ordered_json trace_json(const TraceResult& r, const nlohmann::ordered_json& header,
                                  const std::function<std::string(int32_t)>& text, int n_top) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (int il = 0; il < r.n_layer; ++il) {
    nlohmann::ordered_json heads = nlohmann::ordered_json::array();
    for (int g = 0; g < r.n_head_kv; ++g) {
      const size_t i0 = r.index(il, g, 0);
      heads.push_back({
          {"survival",
           std::vector<int32_t>(r.survival.begin() + i0, r.survival.begin() + i0 + r.n_tokens)},
          {"alive_at_end",
           std::vector<int>(r.alive_at_end.begin() + i0, r.alive_at_end.begin() + i0 + r.n_tokens)},
      });
    }
    layers.push_back({
        {"layer", il},
        {"first_token_survival", r.first_token_survival[il]},
        {"recent_share", number(r.recent_share[il])},
        {"survival_median_evicted", number(r.survival_median[il])},
        {"survival_p90_evicted", number(r.survival_p90[il])},
        {"evicted_on_arrival", number(r.evicted_on_arrival[il])},
        {"kept_over_2k", number(r.kept_over_2k[il])},
        {"mean_age", number(r.mean_age[il])},
        {"far_share", number(r.far_share[il])},
        {"mean_survival",
         floats(std::vector<double>(r.layer_survival.begin() + il * r.n_tokens,
                                    r.layer_survival.begin() + (il + 1) * r.n_tokens))},
        {"heads", heads},
    });
  }
  nlohmann::ordered_json texts = nlohmann::ordered_json::array();
  for (int32_t id : r.tokens) texts.push_back(text(id));
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (const TokenSurvival& t : longest_kept(r, text, n_top)) {
    top.push_back({{"text", t.text}, {"mean_survival", t.mean_survival}, {"count", t.count}});
  }
  return {
      {"header", header},
      {"policy", r.policy},
      {"budget", r.budget >= 0 ? nlohmann::ordered_json(r.budget) : nlohmann::ordered_json()},
      {"n_layer", r.n_layer},
      {"n_head_kv", r.n_head_kv},
      {"n_tokens", r.n_tokens},
      {"survival_definition",
       "number of later tokens whose attention included the token: e - p if evicted at step e, "
       "T - 1 - p if alive at the end"},
      {"tokens", r.tokens},
      {"token_text", texts},
      {"mean_survival", floats(r.mean_survival)},
      {"recent_share_mean", number(r.recent_share_mean)},
      {"longest_kept", top},
      {"layers", layers},
  };
}

}  // namespace tova::eval
