// An output folder written all at once: files go into a hidden temporary sibling that is
// renamed to the final name by commit(), so a failure at any point leaves nothing behind.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tova/result.h"

namespace tova::plot {

class OutputDir {
 public:
  // Creates the temporary sibling now, so an unwritable place fails before any long work.
  // An existing non-empty `path` is an error unless `replace`; its parent must exist.
  static Result<std::unique_ptr<OutputDir>> create(const std::string& path, bool replace);
  ~OutputDir();  // removes the temporary folder unless committed
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::string& path() const { return path_; }
  const std::string& tmp_path() const { return tmp_; }
  std::string file(std::string_view name) const { return tmp_ + "/" + std::string(name); }

  // Moves the temporary folder to `path` (replacing what is there if allowed).
  Status commit();

 private:
  OutputDir(std::string path, std::string tmp, bool replace)
      : path_(std::move(path)), tmp_(std::move(tmp)), replace_(replace) {}
  std::string path_;
  std::string tmp_;
  bool replace_;
  bool committed_ = false;
};

// Writes a whole file; the error names it.
Status write_file(const std::string& path, std::string_view content);

}  // namespace tova::plot
