// The public face of random-weight mmproj fixtures (tova/vision.h) over vision/.
#include "model/random_model.h"
#include "tova/vision.h"
#include "vision/gemma4v_fixture.h"
#include "vision/mmproj_config.h"

namespace tova {

std::string projector_type_choices() { return vision::projector_type_choices(); }

Result<RandomMmprojReport> make_random_mmproj(const RandomMmprojOptions& o, const std::string& path) {
  if (o.projector != "gemma4v") {
    return make_error("unknown projector type '{}' (supported: {})", o.projector,
                      vision::projector_type_choices());
  }
  TOVA_ASSIGN_OR_RETURN(const GgmlType type, parse_type_name(o.type));
  int width = o.projection_dim;
  if (width <= 0) {  // the width of the text fixture the projector pairs with
    TOVA_ASSIGN_OR_RETURN(const model::RandomShape text, model::find_random_arch("gemma4"));
    width = text.n_embd;
  }
  TOVA_ASSIGN_OR_RETURN(
      const vision::Gemma4vFixtureStats st,
      vision::write_gemma4v_fixture({.type = type, .projection_dim = width, .seed = o.seed}, path));
  return RandomMmprojReport{.n_tensors = st.n_tensors, .n_bytes = st.n_bytes, .projection_dim = width};
}

}  // namespace tova
