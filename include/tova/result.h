// Result<T> and Status: how library code reports failure. Library code never prints or exits;
// every error carries one line that names the file, key, tensor or field at fault. Public: every
// call of the face returns one.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>
#include <variant>

namespace tova {

struct Error {
  std::string message;
};

template <typename... Args>
Error make_error(fmt::format_string<Args...> f, Args&&... args) {
  return Error{fmt::format(f, std::forward<Args>(args)...)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }
  const std::string& message() const { return error().message; }

 private:
  std::variant<T, Error> v_;
};

using Status = Result<std::monostate>;
inline Status ok_status() { return Status(std::monostate{}); }

}  // namespace tova

#define TOVA_CONCAT_INNER_(a, b) a##b
#define TOVA_CONCAT_(a, b) TOVA_CONCAT_INNER_(a, b)

// Returns the error of a Result/Status expression from the enclosing function.
#define TOVA_RETURN_IF_ERROR(expr)                          \
  do {                                                      \
    auto&& tova_status_ = (expr);                           \
    if (!tova_status_.ok()) return tova_status_.error();    \
  } while (0)

// `TOVA_ASSIGN_OR_RETURN(auto x, Foo());` declares x from a Result or returns its error.
#define TOVA_ASSIGN_OR_RETURN(lhs, expr) \
  TOVA_ASSIGN_OR_RETURN_IMPL_(TOVA_CONCAT_(tova_result_, __LINE__), lhs, expr)
#define TOVA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.error();                \
  lhs = std::move(tmp).value()
