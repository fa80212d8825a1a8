// A Jinja template as Hugging Face renders chat templates: jinja2's
// ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, loopcontrols), with
// raise_exception and strftime_now as globals and a tojson that keeps non-ASCII characters.
// Parse once, render many times; errors name the template line and column.
//
//   auto t = jinja::Template::parse(text);
//   auto s = t->render(jinja::Value::dict({{"messages", ...}, {"add_generation_prompt", true}}));
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "jinja/renderer.h"
#include "jinja/value.h"

namespace tova::jinja {

struct TemplateOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

struct RenderOptions {
  RenderLimits limits;
  // The time strftime_now formats, in seconds since the epoch (UTC); unset: now, local time,
  // as Hugging Face's datetime.now().
  std::optional<long long> now;
};

class Template {
 public:
  static Result<Template> parse(std::string_view source, const TemplateOptions& o = {});
  // `context`: a dict of the template's variables (messages, bos_token, ...). The error of a
  // template that raises (raise_exception, an undefined attribute, a limit) names its line.
  Result<std::string> render(const Value& context, const RenderOptions& o = {}) const;

 private:
  struct Parsed;
  explicit Template(std::shared_ptr<const Parsed> p) : parsed_(std::move(p)) {}
  std::shared_ptr<const Parsed> parsed_;
};

}  // namespace tova::jinja
