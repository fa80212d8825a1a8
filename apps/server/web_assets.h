// The web page's files (apps/server/web/), compiled into the binary by embed_web.cmake.
#pragma once

#include <span>
#include <string_view>

namespace tova::server {

struct WebAsset {
  std::string_view path;          // "/index.html"
  std::string_view content_type;  // "text/html; charset=utf-8"
  std::string_view body;
};

std::span<const WebAsset> web_assets();

}  // namespace tova::server
