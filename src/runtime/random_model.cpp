// The public face of random-weight models (tova/random_model.h) over model/fixture/fixture.h.
#include "tova/random_model.h"

#include <thread>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "model/fixture/fixture.h"

namespace tova {

Result<RandomModelReport> make_random_model(const RandomModelOptions& o, const std::string& path) {
  if (o.shape.empty() == o.arch.empty()) return make_error("give a shape or an architecture");
  TOVA_ASSIGN_OR_RETURN(model::RandomShape shape,
                        o.arch.empty() ? model::find_random_shape(o.shape)
                                       : model::find_random_arch(o.arch));
  for (const std::string& s : o.set) TOVA_RETURN_IF_ERROR(model::set_shape_field(shape, s));
  TOVA_ASSIGN_OR_RETURN(const GgmlType type, model::parse_random_type(o.type));
  std::string vocab = o.vocab;
  if (vocab.empty()) {
    const std::vector<std::string> dirs = model::default_vocab_dirs();
    TOVA_ASSIGN_OR_RETURN(vocab, model::find_vocab(shape, dirs));
  }
  const int n_threads =
      o.n_threads > 0 ? o.n_threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool pool(n_threads);
  TOVA_ASSIGN_OR_RETURN(const model::RandomModelStats st,
                        model::write_fixture(
                            {.shape = shape,
                             .type = type,
                             .vocab_path = vocab,
                             .seed = o.seed,
                             .plan_only = o.plan_only},
                            path, pool));
  RandomModelReport r{.description = shape.description,
                      .type = std::string(type_name(type)),
                      .n_tensors = st.n_tensors,
                      .n_params = st.n_params,
                      .n_bytes = st.n_bytes};
  for (const model::RandomModelStats::Tensor& t : st.tensors) {
    r.tensors.push_back({.name = t.name,
                         .type = std::string(type_name(t.type)),
                         .dims = t.dims,
                         .n_bytes = t.n_bytes});
  }
  return r;
}

std::string random_shape_choices() { return model::random_shape_choices(); }
std::string random_arch_choices() { return model::random_arch_choices(); }
std::string random_type_choices() { return model::random_type_choices(); }
std::string random_shape_field_choices() { return model::shape_field_choices(); }

}  // namespace tova
