// Python's str operations on UTF-8 text, as the filters and methods templates call use them
// (str.strip, split, splitlines, replace, title, ...). Case mapping covers ASCII letters only;
// other characters keep their case.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tova::jinja::py {

bool is_space_at(std::string_view s, size_t i, size_t* len);  // Python whitespace at byte i
std::string strip(std::string_view s, std::optional<std::string_view> chars, bool left,
                  bool right);
// str.split(sep, maxsplit) (sep unset: runs of whitespace); rsplit from the right.
std::vector<std::string> split(std::string_view s, std::optional<std::string_view> sep,
                               long maxsplit);
std::vector<std::string> rsplit(std::string_view s, std::optional<std::string_view> sep,
                                long maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view with, long count);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);  // str.capitalize
std::string title(std::string_view s);       // str.title
size_t count(std::string_view s, std::string_view sub);
bool is_lower(std::string_view s);
bool is_upper(std::string_view s);
// Code point offset of `sub` in s (str.find), or -1.
long find(std::string_view s, std::string_view sub, bool reverse);
std::string center(std::string_view s, long width, std::string_view fill = " ");
std::string html_escape(std::string_view s);  // markupsafe.escape

}  // namespace tova::jinja::py
