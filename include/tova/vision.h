// Images in: mmproj files (llama.cpp's vision encoder + projector GGUFs) and their random-weight
// fixtures (`tova make-random --projector gemma4v`).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tova/result.h"

namespace tova {

// The projector types tova computes ("gemma4v").
std::string projector_type_choices();

struct RandomMmprojOptions {
  std::string projector = "gemma4v";
  std::string type = "f32";  // the matrices' type: f32, f16 or q8_0
  // The text model's embedding width the projector maps to; 0: the width of the projector's
  // text-family fixture (`tova make-random --arch gemma4`: 64).
  int projection_dim = 0;
  uint64_t seed = 1;
};

struct RandomMmprojReport {
  int n_tensors = 0;
  uint64_t n_bytes = 0;
  int projection_dim = 0;
};

// Writes a random-weight mmproj fixture at `path`; an error names the unknown projector or type.
Result<RandomMmprojReport> make_random_mmproj(const RandomMmprojOptions& o, const std::string& path);

struct ImageEncodeOptions {
  std::string mmproj;
  std::string image;       // PNG, JPEG (what stb_image reads)
  std::string text_model;  // if given: the projector must map to its embedding width
  int n_threads = 0;       // 0: every core
  int repeat = 1;          // encode this many times (timing: the best is reported)
};

struct ImageEncoding {
  std::string projector;  // "gemma4v"
  int width = 0;          // the decoded image
  int height = 0;
  int n_tokens = 0;  // image tokens
  int n_embd = 0;    // their width (the text model's)
  int grid_x = 0;    // tokens per row and rows of them
  int grid_y = 0;
  double load_seconds = 0;    // opening the mmproj
  double decode_seconds = 0;  // reading and decoding the image
  double encode_seconds = 0;  // preprocessing and the encoder, best of `repeat`
  std::vector<float> embeddings;  // [n_tokens][n_embd]
};

// Opens the mmproj (and checks it against text_model), decodes the image and encodes it; an
// error names the file and the key, tensor or field at fault.
Result<ImageEncoding> encode_image(const ImageEncodeOptions& o);

// An image encoded by an engine's mmproj (Engine::encode_image), ready to be queued into its
// sessions (Session::queue_image) any number of times: the rows are shared, never copied.
struct Image {
  std::string name;  // what errors name: the file, "image 2"
  int width = 0;     // as decoded
  int height = 0;
  int n_tokens = 0;  // tokens (and positions) it takes in the text sequence
  int n_embd = 0;    // their width: the text model's
  // A hash of the image's file bytes: equal ids, the same image. A session's history holds
  // ids derived from it for the image's tokens (image_token_id), so prefix reuse tells two
  // images apart and never takes an image token for a text token.
  uint64_t id = 0;
  std::shared_ptr<const std::vector<float>> rows;  // [n_tokens][n_embd]
  double encode_seconds = 0;  // 0 when the engine had encoded these bytes before
};

// Where an image goes in a prompt's text: llama.cpp's media marker (mtmd_default_marker), which
// Session::queue_text, `tova run -p` and the chat front ends read.
inline constexpr const char* kMediaMarker = "<__media__>";

// The history's id of token t of the image whose id is image_id: negative (text ids are not),
// below -1 (which means "no token" in places), a hash of both.
int32_t image_token_id(uint64_t image_id, int t);
inline bool is_image_token(int32_t id) { return id < -1; }

// Width and height from an image's header alone (nothing decoded): limits are checked before
// any pixel memory is taken. An error names `name` and says why the bytes are not an image.
struct ImageHeader {
  int width = 0;
  int height = 0;
};
Result<ImageHeader> read_image_header(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace tova
