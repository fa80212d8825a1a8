#include "tova/engine.h"

#include <filesystem>
#include <thread>
#include <vector>

#include "core/timer.h"

namespace tova {

Result<std::unique_ptr<Engine>> Engine::load(const EngineOptions& o) {
  auto e = std::unique_ptr<Engine>(new Engine());
  e->path_ = o.model_path.empty() ? bundled_model_path() : o.model_path;
  Timer t;
  TOVA_ASSIGN_OR_RETURN(e->model_, model::Model::load(e->path_, o.model));
  if (o.need_tokenizer) {
    TOVA_ASSIGN_OR_RETURN(e->tokenizer_, tok::Tokenizer::from_gguf(e->model_->file()));
  }
  e->load_seconds_ = t.seconds();
  const int n = o.n_threads > 0
                    ? o.n_threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  e->pool_ = std::make_unique<ThreadPool>(n);
  return e;
}

std::string bundled_model_path() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    candidates.push_back(exe.parent_path() / "../../assets/stories260K.gguf");
    candidates.push_back(exe.parent_path() / "../share/tova/stories260K.gguf");
  }
  candidates.push_back("assets/stories260K.gguf");
  for (const auto& c : candidates) {
    if (fs::exists(c, ec)) return fs::weakly_canonical(c, ec).string();
  }
  return "assets/stories260K.gguf";
}

}  // namespace tova
