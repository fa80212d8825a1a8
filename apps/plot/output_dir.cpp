#include "output_dir.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tova/field_names.h"

namespace tova::plot {

namespace fs = std::filesystem;

Result<std::unique_ptr<OutputDir>> OutputDir::create(const std::string& path, bool replace) {
  if (path.empty()) return make_error("no output folder given");
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "out/" -> "out"
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) {
      return make_error("output folder '{}' exists and is not a folder", path);
    }
    if (!fs::is_empty(p, ec) && !replace) {
      return make_error("{}: output folder '{}' exists and is not empty, and replacing it was not asked for",
                        field::kReplace, path);
    }
  }
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string name = p.filename().string();
  name.insert(name.begin(), '.');  // (GCC 12 warns falsely on "." + string)
  name += ".tmp-XXXXXX";
  std::string tmpl = (parent / name).string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return make_error("cannot create output folder '{}': {}", path, std::strerror(errno));
  }
  return std::unique_ptr<OutputDir>(new OutputDir(p.string(), tmpl, replace));
}

OutputDir::~OutputDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

Status OutputDir::commit() {
  std::error_code ec;
  // mkdtemp made the folder private; give it the usual permissions.
  fs::permissions(tmp_,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  if (fs::exists(path_, ec)) {
    if (!fs::is_directory(path_, ec)) {
      return make_error("output folder '{}' exists and is not a folder", path_);
    }
    if (!fs::is_empty(path_, ec) && !replace_) {
      return make_error("output folder '{}' appeared while running and is not empty", path_);
    }
    fs::remove_all(path_, ec);
    if (ec) return make_error("cannot replace output folder '{}': {}", path_, ec.message());
  }
  fs::rename(tmp_, path_, ec);
  if (ec) return make_error("cannot move results into '{}': {}", path_, ec.message());
  committed_ = true;
  return ok_status();
}

Status write_file(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error("cannot create '{}'", path);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) return make_error("cannot write '{}'", path);
  return ok_status();
}

}  // namespace tova::plot
