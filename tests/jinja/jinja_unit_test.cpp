// Hand-written templates, one construct each, with the strings jinja2 gives (checked against
// python3-jinja2 in Hugging Face's environment: trim_blocks, lstrip_blocks, loopcontrols).
#include <gtest/gtest.h>

#include "jinja/json.h"
#include "jinja/template.h"

namespace {

using tova::jinja::Template;
using tova::jinja::Value;

std::string render(std::string_view src, const std::string& ctx_json = "{}") {
  auto t = Template::parse(src);
  if (!t.ok()) return "PARSE ERROR: " + t.message();
  auto r = t->render(tova::jinja::from_json(nlohmann::ordered_json::parse(ctx_json)), {.now = 0});
  if (!r.ok()) return "ERROR: " + r.message();
  return *r;
}

TEST(Jinja, Smoke) { EXPECT_EQ(render("a{{ 1 + 2 }}b"), "a3b"); }

}  // namespace
