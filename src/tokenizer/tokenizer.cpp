#include "tokenizer/tokenizer.h"

#include "tokenizer/bpe.h"
#include "tokenizer/spm.h"

namespace tova::tok {

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const io::GgufFile& file) {
  if (file.find("tokenizer.ggml.model") == nullptr) {
    return make_error("{}: no tokenizer (tokenizer.ggml.model is missing)", file.path());
  }
  TOVA_ASSIGN_OR_RETURN(std::string model, file.get_string("tokenizer.ggml.model"));
  if (model == "llama") return make_spm_tokenizer(file);
  if (model == "gpt2") return make_bpe_tokenizer(file);
  if (model == "gemma4") return make_gemma4_tokenizer(file);
  return make_error("unsupported tokenizer '{}' (tokenizer.ggml.model) in {}", model,
                    file.path());
}

}  // namespace tova::tok
