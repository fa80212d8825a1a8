#include "jinja/template.h"

#include <ctime>

#include "jinja/ast.h"
#include "jinja/builtins.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"

namespace tova::jinja {

struct Template::Parsed {
  Body body;
};

Result<Template> Template::parse(std::string_view source, const TemplateOptions& o) {
  TOVA_ASSIGN_OR_RETURN(std::vector<Token> tokens,
                        tokenize(source, LexOptions{.trim_blocks = o.trim_blocks,
                                                    .lstrip_blocks = o.lstrip_blocks}));
  TOVA_ASSIGN_OR_RETURN(Body body, jinja::parse(tokens));
  auto p = std::make_shared<Parsed>();
  p->body = std::move(body);
  return Template(std::move(p));
}

Result<std::string> Template::render(const Value& context, const RenderOptions& o) const {
  if (!context.is_dict()) return make_error("the template context must be a dict");
  const bool pinned = o.now.has_value();
  const long long now = pinned ? *o.now : static_cast<long long>(std::time(nullptr));
  Renderer r(o.limits, make_globals(now, /*utc=*/pinned), context);
  return r.render(parsed_->body);
}

}  // namespace tova::jinja
