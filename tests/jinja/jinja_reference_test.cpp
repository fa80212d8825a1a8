// The renderer against Debian's python3-jinja2 rendering as Hugging Face does
// (scripts/jinja_reference.py, run live): every template in $TOVA_SHARED_DIR/templates, and any
// held-back template named by TOVA_JINJA_TEMPLATES (files or folders, ':'-separated), with every
// conversation of tests/data/jinja/conversations.json (system prompts, turns, tools, tool calls and
// results, thinking switches, generation prompt on and off). Where jinja2 renders, the strings
// must be identical; where it raises, the renderer must fail too.
#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "jinja/json.h"
#include "jinja/template.h"
#include "test_data.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using tova::jinja::Template;

constexpr long long kNow = 1738411200;  // 2025-02-01 12:00 UTC: strftime_now on both sides

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool have_reference() {
  return std::system("/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1") == 0;
}

std::vector<fs::path> templates() {
  std::vector<fs::path> out;
  auto add_dir = [&](const fs::path& d) {
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(d)) {
      if (e.path().extension() == ".jinja") found.push_back(e.path());
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  };
  add_dir(fs::path(tova::testing::shared_dir()) / "templates");
  if (const char* extra = std::getenv("TOVA_JINJA_TEMPLATES")) {
    std::stringstream ss(extra);
    std::string item;
    while (std::getline(ss, item, ':')) {
      if (item.empty()) continue;
      if (fs::is_directory(item)) {
        add_dir(item);
      } else {
        out.emplace_back(item);
      }
    }
  }
  return out;
}

json contexts() {
  const json conv = json::parse(read(fs::path(TOVA_TEST_DATA_DIR) / "jinja/conversations.json"));
  json cases = json::array();
  for (const json& c : conv["cases"]) {
    json ctx = json::object();
    ctx["messages"] = c["messages"];
    ctx["bos_token"] = conv["bos_token"];
    ctx["eos_token"] = conv["eos_token"];
    ctx["add_generation_prompt"] = c["add_generation_prompt"];
    if (c.contains("tools")) ctx["tools"] = c["tools"];
    if (c.contains("vars")) {
      for (const auto& [k, v] : c["vars"].items()) ctx[k] = v;
    }
    cases.push_back({{"name", c["name"]}, {"context", ctx}});
  }
  return cases;
}

// jinja2's renderings (or errors) of every case.
json reference(const fs::path& tmpl, const json& cases) {
  const fs::path dir = fs::temp_directory_path();
  const std::string tag = std::to_string(::getpid());
  const fs::path in = dir / ("tova_jinja_ref_in_" + tag + ".json");
  const fs::path out = dir / ("tova_jinja_ref_out_" + tag + ".json");
  std::ofstream(in) << json{{"now", kNow}, {"cases", cases}}.dump();
  const std::string script = std::string(TOVA_TEST_DATA_DIR) + "/../../scripts/jinja_reference.py";
  const std::string arg = tmpl.empty() ? std::string() : "'" + tmpl.string() + "'";
  const std::string cmd = "/usr/bin/python3 '" + script + "' " + arg + " < '" + in.string() +
                          "' > '" + out.string() + "'";
  const int rc = std::system(cmd.c_str());
  json r = rc == 0 ? json::parse(read(out)) : json();
  fs::remove(in);
  fs::remove(out);
  return r;
}

TEST(JinjaReference, EveryTemplateEqualsPythonJinja2) {
  TOVA_REQUIRE_SHARED();
  TOVA_REQUIRE_TOOL(have_reference(), "python3-jinja2");
  const json cases = contexts();
  ASSERT_GE(cases.size(), 20u);
  const auto list = templates();
  ASSERT_FALSE(list.empty());
  for (const fs::path& p : list) {
    SCOPED_TRACE(p.string());
    const json ref = reference(p, cases);
    ASSERT_TRUE(ref.is_array() && ref.size() == cases.size()) << "the reference script failed";
    auto t = Template::parse(read(p));
    int rendered = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(cases[i]["name"].get<std::string>());
      if (!t.ok()) {
        EXPECT_FALSE(ref[i]["ok"].get<bool>()) << "ours fails to parse: " << t.message();
        continue;
      }
      auto ours = t->render(tova::jinja::from_json(cases[i]["context"]), {.now = kNow});
      if (ref[i]["ok"].get<bool>()) {
        ++rendered;
        ASSERT_TRUE(ours.ok()) << ours.message();
        EXPECT_EQ(*ours, ref[i]["text"].get<std::string>());
      } else {
        EXPECT_FALSE(ours.ok()) << "jinja2 raised " << ref[i]["error"].get<std::string>()
                                << "\nbut ours rendered:\n"
                                << *ours;
      }
    }
    std::printf("%-60s %d of %zu conversations rendered (the rest raise on both sides)\n",
                p.filename().c_str(), rendered, cases.size());
    // The conversations must exercise every shared template, not only its errors.
    if (p.parent_path() == fs::path(tova::testing::shared_dir()) / "templates") {
      EXPECT_GE(rendered, 20);
    }
  }
}

// The construct table of jinja_unit_test (tests/data/jinja/constructs.json), live.
TEST(JinjaReference, EveryConstructEqualsPythonJinja2) {
  TOVA_REQUIRE_TOOL(have_reference(), "python3-jinja2");
  const json cases =
      json::parse(read(fs::path(TOVA_TEST_DATA_DIR) / "jinja/constructs.json"));
  const json ref = reference({}, cases);
  ASSERT_TRUE(ref.is_array() && ref.size() == cases.size()) << "the reference script failed";
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i]["name"].get<std::string>());
    auto t = Template::parse(cases[i]["source"].get<std::string>());
    tova::Result<std::string> ours = t.ok() ? t->render(tova::jinja::from_json(cases[i]["context"]),
                                                        {.now = kNow})
                                            : tova::Result<std::string>(t.error());
    if (ref[i]["ok"].get<bool>()) {
      ASSERT_TRUE(ours.ok()) << ours.message();
      EXPECT_EQ(*ours, ref[i]["text"].get<std::string>());
    } else {
      EXPECT_FALSE(ours.ok()) << "jinja2 raised " << ref[i]["error"].get<std::string>();
    }
  }
}

}  // namespace
