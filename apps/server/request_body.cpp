#include "request_body.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "codec.h"
#include "tova/utf8.h"

namespace tova::server {
namespace {

using nlohmann::json;

// Offset of the first byte of `s` that is not part of well-formed UTF-8, or npos.
size_t first_invalid_byte(std::string_view s) {
  // Character by character: the bytes a lead byte announces must form one valid character.
  size_t i = 0;
  while (i < s.size()) {
    size_t n = 1;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0xF0) {
      n = 4;
    } else if (c >= 0xE0) {
      n = 3;
    } else if (c >= 0xC0) {
      n = 2;
    }
    if (i + n > s.size() || !is_valid_utf8(s.substr(i, n))) return i;
    i += n;
  }
  return std::string_view::npos;
}

// Where a SAX parse stands: one level per open object or array.
class PathSax {
 public:
  struct Level {
    bool array = false;
    size_t index = 0;       // arrays: the element being read
    std::string key;        // objects: the last key read
    bool in_value = false;  // objects: between a key and the end of its value
  };

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const std::string&) { return value(); }
  bool string(std::string&) { return value(); }
  bool binary(json::binary_t&) { return value(); }
  bool start_object(size_t) {
    levels_.push_back({});
    return true;
  }
  bool key(std::string& k) {
    levels_.back().key = k;
    levels_.back().in_value = true;
    return true;
  }
  bool end_object() {
    levels_.pop_back();
    return value();
  }
  bool start_array(size_t) {
    levels_.push_back({.array = true});
    return true;
  }
  bool end_array() {
    levels_.pop_back();
    return value();
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  // The path of the string being read when the input ended, and its top-level field.
  std::string path(std::string& top) const {
    std::string out;
    for (size_t d = 0; d < levels_.size(); ++d) {
      const Level& l = levels_[d];
      if (l.array) {
        out += fmt::format("[{}]", l.index);
      } else if (l.in_value) {
        out += (out.empty() ? "" : ".") + l.key;
        if (d == 0) top = l.key;
      } else {  // a key of this object
        return out.empty() ? "a key of the body" : "a key of " + out;
      }
    }
    return out;
  }

 private:
  bool value() {
    if (!levels_.empty()) {
      if (levels_.back().array) {
        ++levels_.back().index;
      } else {
        levels_.back().in_value = false;
      }
    }
    return true;
  }
  std::vector<Level> levels_;
};

// Whether body[at] is inside a JSON string (quotes counted, escapes skipped).
bool inside_string(std::string_view body, size_t at) {
  bool in = false;
  for (size_t i = 0; i < at; ++i) {
    if (in && body[i] == '\\') {
      ++i;
    } else if (body[i] == '"') {
      in = !in;
    }
  }
  return in;
}

}  // namespace

namespace {

// The path of the string holding body[bad] (and its top-level field): the body up to that byte,
// parsed as far as it goes, stops in that string.
std::string path_of(std::string_view body, size_t bad, std::string& top) {
  PathSax sax;
  const std::string_view head = body.substr(0, bad);
  json::sax_parse(head.begin(), head.end(), &sax, nlohmann::detail::input_format_t::json,
                  /*strict=*/false);
  return sax.path(top);
}

}  // namespace

std::optional<std::string> field_with_invalid_utf8(std::string_view body) {
  const size_t bad = first_invalid_byte(body);
  if (bad == std::string_view::npos || !inside_string(body, bad)) return std::nullopt;
  std::string top;
  return path_of(body, bad, top);
}

ApiError unparsable_body(std::string_view body) {
  const size_t bad = first_invalid_byte(body);
  if (bad == std::string_view::npos || !inside_string(body, bad)) {
    return bad_request("", "the request body is not valid JSON");
  }
  std::string top;
  const std::string path = path_of(body, bad, top);
  return bad_request(top, fmt::format("'{}' is not valid UTF-8 (byte 0x{:02X} at offset {} of "
                                      "the body); JSON text is UTF-8",
                                      shown(path), static_cast<unsigned char>(body[bad]), bad));
}

}  // namespace tova::server
