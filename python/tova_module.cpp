// The Python module `tova` (its compiled part, tova._tova): the library's public API
// (include/tova/) as Python classes. Compute runs with the GIL released; the engine's pool takes
// one forward pass at a time (Engine::exclusive), so sessions of one engine may be used from
// several Python threads. Docstrings here; type hints in tova/__init__.pyi.
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tova/engine.h"
#include "tova/eval.h"
#include "tova/field_names.h"
#include "tova/grammar.h"
#include "tova/options.h"
#include "tova/policy_spec.h"
#include "tova/session.h"
#include "tova/state_cache.h"
#include "tova/text_stream.h"
#include "tova/tool_calls.h"
#include "tova/utf8.h"

namespace py = pybind11;
using namespace pybind11::literals;

namespace tova::python {
namespace {

// The library's option names as the Python keywords spell them (core/field_names.h).
constexpr FieldSpelling kKeywords[] = {
    {field::kTemperature, "temperature"},   {field::kTopP, "top_p"},
    {field::kMinP, "min_p"},                {field::kRepeatPenalty, "repeat_penalty"},
    {field::kRepeatLastN, "repeat_last_n"}, {field::kKvBudget, "budget"},
    {field::kKvRotate, "kv_type"},          {field::kTokenIds, "tokens"},
    {field::kPolicies, "policies"},         {field::kPositions, "positions"},
    {field::kKvTypes, "kv_type"},           {field::kWindow, "window"},
    {field::kContext, "ctx"},               {field::kSpillDir, "spill_dir"},
    {field::kChatTemplate, "chat_template"}, {field::kSamples, "samples"},
    {field::kNeedleTemplate, "template"},
};

// Errors reach Python as exceptions whose message is the library's one line, options named as
// the keywords are: ValueError for token ids outside the vocabulary, else RuntimeError.
[[noreturn]] void raise(const std::string& message) {
  const std::string spelled = spell_field(message, kKeywords);
  if (message.starts_with(field::kTokenIds)) throw py::value_error(spelled);
  throw std::runtime_error(spelled);
}
template <typename T>
T unwrap(Result<T> r) {
  if (!r.ok()) raise(r.message());
  return std::move(r).value();
}
void unwrap(const Status& s) {
  if (!s.ok()) raise(s.message());
}

// The model a bare Engine() loads: the bundled stories260K of the source tree this module was
// built from, else what bundled_model_path() finds.
std::string default_model() {
  std::error_code ec;
  if (std::filesystem::exists(TOVA_BUNDLED_MODEL, ec)) return TOVA_BUNDLED_MODEL;
  return bundled_model_path();
}

SamplerParams sampler(float temperature, int top_k, float top_p, float min_p,
                      float repeat_penalty, int repeat_last_n, std::optional<uint64_t> seed) {
  return {.temp = temperature,
          .top_k = top_k,
          .top_p = top_p,
          .min_p = min_p,
          .repeat_penalty = repeat_penalty,
          .repeat_last_n = repeat_last_n,
          .seed = seed ? *seed : std::random_device{}()};
}

py::dict stats_dict(const SessionStats& s) {
  py::list layers;
  for (const LayerStats& l : s.layers) {
    layers.append(py::dict("n_held"_a = l.n_held, "n_evicted"_a = l.n_evicted, "kind"_a = l.kind));
  }
  // Memory by kind of layer state (SessionStats::kinds): names as the library gives them.
  py::dict kinds;
  for (const StateKindStats& k : s.kinds) {
    kinds[py::str(k.kind)] = py::dict(
        "n_layer"_a = k.n_layer,
        "limit"_a = k.limit < 0 ? py::object(py::none()) : py::object(py::int_(k.limit)),
        "max_held"_a = k.max_held, "rows"_a = k.rows, "image_rows"_a = k.image_rows,
        "bytes"_a = k.bytes, "held_bytes"_a = k.held_bytes);
  }
  const py::object budget = s.budget < 0 ? py::object(py::none()) : py::object(py::int_(s.budget));
  // Speculative decoding (SessionStats::speculation): zeros and type "" when off.
  const SpeculationStats& sp = s.speculation;
  const py::dict speculation("type"_a = sp.type, "n_steps"_a = sp.n_steps,
                             "n_drafted"_a = sp.n_drafted, "n_accepted"_a = sp.n_accepted,
                             "acceptance"_a = sp.acceptance(),
                             "draft_kv_bytes"_a = sp.draft_kv_bytes);
  return py::dict("policy"_a = s.policy, "budget"_a = budget,
                  "cache"_a = s.cache, "kv_capacity"_a = s.kv_capacity, "kv_held"_a = s.kv_held,
                  "n_seen"_a = s.n_seen, "n_images"_a = s.n_images,
                  "n_image_tokens"_a = s.n_image_tokens, "keep_images"_a = s.keep_images,
                  "n_images_held"_a = s.n_images_held, "layers"_a = layers, "kinds"_a = kinds,
                  "speculation"_a = speculation);
}

// Records as the JSON files hold them: the library's JSON text, read by Python's json module.
py::object json_to_python(const std::string& text) {
  return py::module_::import("json").attr("loads")(text);
}

// A model's text as a Python str: bytes that are not UTF-8 (half a character from a byte token,
// or ill-formed output) become U+FFFD, as tova serve sends them, instead of a UnicodeDecodeError.
py::str model_text(std::string_view text) {
  const std::string valid = valid_utf8(text);
  return py::str(valid.data(), valid.size());
}

// A str or a list of str.
std::vector<std::string> str_list(const py::object& o) {
  if (py::isinstance<py::str>(o)) return {o.cast<std::string>()};
  return o.cast<std::vector<std::string>>();
}

// Session.generate's iterator: one TextStream over the session.
class Generator {
 public:
  Generator(std::shared_ptr<Session> s, const GenerateOptions& o) : session_(std::move(s)) {
    stream_ = std::make_unique<TextStream>(*session_, o);
  }
  Generator& iter() { return *this; }
  py::str next() {
    while (!stream_->done()) {
      Result<Piece> p = [&] {
        py::gil_scoped_release release;
        return stream_->next();
      }();
      Piece piece = unwrap(std::move(p));
      if (!piece.text.empty()) return model_text(piece.text);
    }
    throw py::stop_iteration();
  }
  py::str cancel() { return model_text(stream_->cancel().text); }
  std::optional<std::string> finish_reason() const {
    if (!stream_->done()) return std::nullopt;
    return std::string(finish_name(stream_->finish()));
  }
  py::dict stats() const {
    const StreamStats& s = stream_->stats();
    return py::dict("n_prompt"_a = s.n_prompt, "prompt_seconds"_a = s.prompt_seconds,
                    "n_generated"_a = s.n_generated, "n_decoded"_a = s.n_decoded,
                    "decode_seconds"_a = s.decode_seconds);
  }
  int32_t unfed() const { return stream_->unfed(); }

 private:
  std::shared_ptr<Session> session_;  // keeps the session alive while iterating
  std::unique_ptr<TextStream> stream_;
};

// The constraint of one generation (generate, chat): set from its root each time, or cleared.
void constrain(Session& s, const std::optional<std::string>& grammar,
               const py::object& json_schema) {
  std::string g = grammar.value_or("");
  if (!json_schema.is_none()) {
    if (grammar) throw py::value_error("give grammar or json_schema, not both");
    const std::string schema =
        py::isinstance<py::str>(json_schema)
            ? json_schema.cast<std::string>()
            : py::module_::import("json").attr("dumps")(json_schema).cast<std::string>();
    Result<std::string> r = json_schema_grammar(schema);
    if (!r.ok()) throw py::value_error(r.message());
    g = std::move(*r);
  }
  if (!g.empty() || !s.sampling().grammar.empty()) {
    if (Status st = s.set_grammar(g); !st.ok()) throw py::value_error(st.message());
  }
}

// A turn after what the session has queued: a `full` cache allocates its tokens before it
// starts, as run and chat do (the copy of a growing cache happens here, not in the middle of the
// answer), and the token that hits max_tokens joins the history (as in `tova chat`).
Generator start_turn(const std::shared_ptr<Session>& s, int max_tokens,
                     std::vector<std::string> stop, bool ignore_eos, int64_t max_context) {
  const int64_t n_history = static_cast<int64_t>(s->history().size());
  const int64_t n_hold =
      max_tokens >= 0 ? n_history + max_tokens : std::max<int64_t>(max_context, 0);
  if (n_hold > 0) unwrap(s->reserve(max_context > 0 ? std::min(n_hold, max_context) : n_hold));
  return Generator(s, {.max_tokens = max_tokens,
                       .stop = std::move(stop),
                       .ignore_eos = ignore_eos,
                       .max_context = max_context,
                       .keep_length_token = true});
}

// Python's messages ([{"role": ..., "content": ...}, ...], OpenAI's optional fields too) as the
// library's; a key it does not know is an error naming it.
std::vector<ChatMessage> chat_messages(const py::list& messages) {
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!py::isinstance<py::dict>(messages[i])) {
      throw py::value_error(fmt::format("messages[{}]: expected a dict", i));
    }
    ChatMessage m;
    for (const auto& [key, value] : messages[i].cast<py::dict>()) {
      const std::string k = key.cast<std::string>();
      std::string* text = k == "role"                ? &m.role
                          : k == "content"           ? &m.content
                          : k == "reasoning_content" ? &m.reasoning_content
                          : k == "name"              ? &m.name
                          : k == "tool_call_id"      ? &m.tool_call_id
                                                     : nullptr;
      if (text != nullptr) {
        if (!value.is_none()) *text = value.cast<std::string>();
      } else if (k == "tool_calls") {
        m.tool_calls = py::module_::import("json").attr("dumps")(value).cast<std::string>();
      } else {
        throw py::value_error(fmt::format(
            "messages[{}]: unknown key '{}' (role, content, reasoning_content, name, "
            "tool_call_id, tool_calls)",
            i, k));
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

// An image given as a path (str or os.PathLike), bytes, or an Image already encoded.
Image image_of(const Engine& e, const py::object& image) {
  if (py::isinstance<Image>(image)) return image.cast<Image>();
  if (py::isinstance<py::bytes>(image) || py::isinstance<py::bytearray>(image)) {
    const std::string b = py::isinstance<py::bytes>(image)
                              ? image.cast<std::string>()
                              : py::bytes(image.cast<py::bytearray>()).cast<std::string>();
    py::gil_scoped_release release;
    return unwrap(e.encode_image(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size()), "image"));
  }
  const std::string path = py::str(py::module_::import("os").attr("fspath")(image));
  py::gil_scoped_release release;
  return unwrap(e.encode_image_file(path));
}

std::vector<int32_t> prompt_tokens(const Session& s, const py::object& prompt) {
  if (prompt.is_none()) return {};
  if (py::isinstance<py::str>(prompt)) {
    // A fresh session starts with BOS; a continued one continues its text.
    return s.engine().tokenize(prompt.cast<std::string>(), s.history().empty());
  }
  return prompt.cast<std::vector<int32_t>>();
}

// tova.Engine: loading, text, new and saved sessions.
void bind_engine_text(py::class_<Engine, std::shared_ptr<Engine>>& cls);
void bind_engine_sessions(py::class_<Engine, std::shared_ptr<Engine>>& cls);

// tova.Image: an image encoded by an engine's mmproj.
void bind_image(py::module_& m) {
  py::class_<Image>(m, "Image", R"(An image encoded by an Engine's mmproj (Engine.encode_image): its rows
for the text model, shared by every session it is given to.)")
      .def_readonly("name", &Image::name)
      .def_readonly("width", &Image::width)
      .def_readonly("height", &Image::height)
      .def_readonly("n_tokens", &Image::n_tokens, "tokens (positions) it takes in the text")
      .def_readonly("n_embd", &Image::n_embd)
      .def_readonly("id", &Image::id, "a hash of its bytes: equal ids, the same image")
      .def_readonly("encode_seconds", &Image::encode_seconds,
                    "0 when the engine had encoded these bytes before")
      .def("__repr__", [](const Image& i) {
        return fmt::format("Image({} x {}, {} tokens)", i.width, i.height, i.n_tokens);
      });
}

void bind_engine(py::module_& m) {
  py::class_<Engine, std::shared_ptr<Engine>> cls(m, "Engine", R"(A loaded GGUF model, its tokenizer and the
thread pool that runs it. Immutable and shared by its sessions.

Engine(path=None, threads=0, f32_activations=False, mmap=False, draft_model=None, mmproj=None,
       repack=None)
  path: a GGUF file (None: the bundled stories260K); threads: 0 = every core;
  repack: True/False to repack Q4_0 weights at load into 8-row interleaved groups or not
  (None: the library's default, `tova --repack` / `--no-repack`);
  draft_model: a GGUF with the same vocabulary, for speculative decoding (spec_type
  "draft-simple" in Engine.session); mmproj: a vision encoder + projector GGUF (llama.cpp's
  mmproj) beside the model: sessions then take images (encode_image, generate(images=...)).)");
  cls.def(py::init([](std::optional<std::string> path, int threads, bool f32_activations,
                       bool mmap, std::optional<std::string> draft_model,
                       std::optional<std::string> mmproj, std::optional<bool> repack) {
             EngineOptions o{.model_path = path ? *path : default_model(),
                             .n_threads = threads,
                             .f32_activations = f32_activations,
                             .mmap = mmap,
                             .repack = repack,
                             .draft_model_path = draft_model ? *draft_model : std::string(),
                             .mmproj_path = mmproj ? *mmproj : std::string()};
             Result<std::unique_ptr<Engine>> e = [&] {
               py::gil_scoped_release release;
               return Engine::load(o);
             }();
             return std::shared_ptr<Engine>(unwrap(std::move(e)));
           }),
           "path"_a = py::none(), "threads"_a = 0, "f32_activations"_a = false, "mmap"_a = false,
           "draft_model"_a = py::none(), "mmproj"_a = py::none(), "repack"_a = py::none())
      .def_property_readonly("has_mmproj", &Engine::has_mmproj)
      .def(
          "encode_image",
          [](const Engine& e, const py::object& image) { return image_of(e, image); },
          "image"_a,
          "An image (a file path, bytes, or an Image) encoded by the mmproj: an Image to pass to "
          "generate(images=...) any number of times. The same bytes again are not re-encoded.")
      .def_property_readonly("path", &Engine::path, "the model file")
      .def_property_readonly("n_vocab", &Engine::n_vocab)
      .def_property_readonly("n_ctx_train", &Engine::n_ctx_train,
                             "the training context from the model's metadata")
      .def_property_readonly("n_threads", &Engine::n_threads)
      .def_property_readonly("architecture", &Engine::architecture)
      .def_property_readonly("weight_bytes", &Engine::weight_bytes,
                             "bytes of weight data a forward pass streams")
      .def_property_readonly("mtp_bytes", &Engine::mtp_bytes,
                             "bytes of the file's multi-token prediction blocks (0: none)")
      .def_property_readonly("n_mtp_blocks", &Engine::n_mtp_blocks)
      .def_property_readonly("load_seconds", &Engine::load_seconds);
  bind_engine_text(cls);
  bind_engine_sessions(cls);
}

// Engine: tokens, text and chat prompts.
void bind_engine_text(py::class_<Engine, std::shared_ptr<Engine>>& cls) {
  cls.def(
          "tokenize",
          [](const Engine& e, const std::string& text, bool add_bos, bool parse_special) {
            return e.tokenize(text, add_bos, parse_special);
          },
          "text"_a, "add_bos"_a = true, "parse_special"_a = false,
          "Token ids of text; add_bos adds BOS as the vocabulary says, parse_special reads the "
          "text of control tokens as those tokens.")
      .def(
          "detokenize", [](const Engine& e, const std::vector<int32_t>& ids) {
            return py::bytes(unwrap(e.detokenize(ids))).attr("decode")("utf-8", "replace");
          },
          "tokens"_a, "The text of token ids.")
      .def("is_eog", &Engine::is_eog, "token"_a, "End of generation (EOS, EOT, ...)?")
      .def(
          "chat_prompt",
          [](const Engine& e, const py::list& messages, const std::string& chat_template,
             const py::object& tools, bool add_generation_prompt) {
            ChatOptions o{.chat_template = chat_template,
                          .add_generation_prompt = add_generation_prompt};
            if (!tools.is_none()) {
              o.tools = py::module_::import("json").attr("dumps")(tools).cast<std::string>();
            }
            return unwrap(e.chat_prompt(chat_messages(messages), o));
          },
          "messages"_a, "chat_template"_a = "", "tools"_a = py::none(),
          "add_generation_prompt"_a = true,
          "The token ids of a conversation rendered with the chat template (as Session.chat "
          "feeds it): special tokens parsed, BOS added unless the template wrote it.");
}

// CacheOptions with --kv-keep-images' choice (the keywords keep_images, max_kept_images).
CacheOptions with_kept_images(CacheOptions c, bool keep, int max_kept) {
  c.keep_images = keep;
  c.max_kept_images = max_kept;
  return c;
}

// Engine: new sessions and sessions saved to files.
void bind_engine_sessions(py::class_<Engine, std::shared_ptr<Engine>>& cls) {
  cls.def(
          "session",
          [](const std::shared_ptr<Engine>& e, const std::string& policy, int budget,
             const std::string& prefill, const std::string& positions, const std::string& kv_type,
             float temperature, int top_k, float top_p, float min_p, float repeat_penalty,
             int repeat_last_n, std::optional<uint64_t> seed, int n_batch,
             const std::string& spec_type, int spec_draft_n_max, int spec_draft_n_min,
             float spec_draft_p_min, int spec_ngram_size_n, int spec_ngram_size_m,
             int spec_ngram_mod_n_match, bool keep_images, int max_kept_images) {
            SessionOptions o{
                .cache = with_kept_images(
                    unwrap(parse_cache_options(policy, budget, prefill, kv_type, positions)),
                    keep_images, max_kept_images),
                .sampling = sampler(temperature, top_k, top_p, min_p, repeat_penalty,
                                    repeat_last_n, seed),
                .n_batch = n_batch,
                .speculative = {.type = spec_type,
                                .n_max = spec_draft_n_max,
                                .n_min = spec_draft_n_min,
                                .p_min = spec_draft_p_min,
                                .ngram_size_n = spec_ngram_size_n,
                                .ngram_size_m = spec_ngram_size_m,
                                .ngram_mod_n_match = spec_ngram_mod_n_match}};
            // The session holds the engine: it lives as long as any of its sessions.
            std::unique_ptr<Session> s = unwrap(e->new_session(o));
            return std::shared_ptr<Session>(s.release(),
                                            [keep = e](Session* p) { delete p; });
          },
          "policy"_a = "full", "budget"_a = 0, "prefill"_a = "exact", "positions"_a = "absolute",
          "kv_type"_a = "f32", "temperature"_a = 0.8f, "top_k"_a = 40, "top_p"_a = 0.95f,
          "min_p"_a = 0.05f, "repeat_penalty"_a = 1.0f, "repeat_last_n"_a = 64,
          "seed"_a = py::none(), "n_batch"_a = 512, "spec_type"_a = "",
          "spec_draft_n_max"_a = 16, "spec_draft_n_min"_a = 0, "spec_draft_p_min"_a = 0.75f,
          "spec_ngram_size_n"_a = 12, "spec_ngram_size_m"_a = 48, "spec_ngram_mod_n_match"_a = 24,
          "keep_images"_a = false, "max_kept_images"_a = 8,
          R"(A new session (a multi-state with its sampler and history).
policy: one of tova.policies() (NAME or NAME:ARG); budget: states kept per layer (bounded
policies); prefill: exact | chunk:C | chunk:inf; positions: absolute | gap | rank;
keep_images: image states are never evicted, under every policy (held beside the budget: text
keeps its k states, K/V grows by each image kept, at most max_kept_images images; needs the
Engine's mmproj), as --kv-keep-images;
kv_type: K/V storage (f32 | f16 | bf16 | q8_0 | q4_0, or k=TYPE,v=TYPE); temperature 0 = greedy; seed None = random.
spec_type: speculative decoding, "ngram-simple", "ngram-mod" (n-gram size 24, as llama.cpp),
"draft-mtp" (the file's own multi-token prediction block) or "draft-simple" (Engine's draft_model), with
llama.cpp's --spec-* options as spec_*; the text is the same as without it.)")
      .def(
          "load_session",
          [](const std::shared_ptr<Engine>& e, const std::string& path, float temperature,
             int top_k, float top_p, float min_p, float repeat_penalty, int repeat_last_n,
             std::optional<uint64_t> seed) {
            SessionOptions o{.sampling = sampler(temperature, top_k, top_p, min_p,
                                                 repeat_penalty, repeat_last_n, seed)};
            Result<LoadedSession> r = [&] {
              py::gil_scoped_release release;
              return e->load_session(path, o);
            }();
            LoadedSession loaded = unwrap(std::move(r));
            return std::shared_ptr<Session>(loaded.session.release(),
                                            [keep = e](Session* p) { delete p; });
          },
          "path"_a, "temperature"_a = 0.8f, "top_k"_a = 40, "top_p"_a = 0.95f, "min_p"_a = 0.05f,
          "repeat_penalty"_a = 1.0f, "repeat_last_n"_a = 64, "seed"_a = py::none(),
          "A session saved by Session.save (or tova run --session), continuing where it stopped; "
          "its cache options are the file's. The sampler (and its random state) too, when the "
          "file holds one.");
}

// tova.Session: feeding, logits, sampling, generation.
void bind_session_generation(py::class_<Session, std::shared_ptr<Session>>& cls) {
  cls
      .def(
          "feed",
          [](Session& s, const std::vector<int32_t>& tokens) {
            Status st = [&] {
              py::gil_scoped_release release;
              return s.feed(tokens);
            }();
            unwrap(st);
          },
          "tokens"_a, "Feeds token ids (their logits are then logits()).")
      .def(
          "logits",
          [](const std::shared_ptr<Session>& s) {
            if (!s->has_logits()) {
              throw std::runtime_error("the session has no logits (feed it first)");
            }
            const std::span<const float> l = s->logits();
            // A read-only view of the session's buffer (no copy): the next feed changes it.
            py::array_t<float> a({static_cast<py::ssize_t>(l.size())}, {sizeof(float)},
                                 l.data(), py::cast(s));
            a.attr("setflags")("write"_a = false);
            return a;
          },
          "The logits after the last token fed, float32 [n_vocab]: a read-only view of the "
          "session's buffer (no copy) that the next feed overwrites; .copy() to keep them.")
      .def("sample", &Session::sample,
           "The next token, sampled from logits() by the session's sampler (not fed).")
      .def(
          "decode",
          [](Session& s) {
            py::gil_scoped_release release;
            return unwrap(s.decode());
          },
          "One decoding step: samples the next token, feeds it, returns it.");
}

// tova.Session: text generation, plain and as a chat.
void bind_session_text(py::class_<Session, std::shared_ptr<Session>>& cls) {
  cls.def(
          "generate",
          [](const std::shared_ptr<Session>& s, const py::object& prompt, int max_tokens,
             std::vector<std::string> stop, bool ignore_eos, int64_t max_context,
             std::optional<std::string> grammar, const py::object& json_schema,
             const py::object& images) {
            constrain(*s, grammar, json_schema);
            if (images.is_none()) {
              s->queue(prompt_tokens(*s, prompt));
            } else {
              std::vector<Image> imgs;
              for (const py::handle h : images) {
                imgs.push_back(image_of(s->engine(), py::reinterpret_borrow<py::object>(h)));
              }
              std::string text = prompt.is_none() ? std::string() : prompt.cast<std::string>();
              if (text.find(kMediaMarker) == std::string::npos) {  // the images first
                std::string markers;
                for (size_t i = 0; i < imgs.size(); ++i) markers += kMediaMarker;
                text = markers + text;
              }
              unwrap(s->queue_text(text, imgs,
                                   {.add_bos = s->history().empty(), .parse_special = false}));
            }
            return start_turn(s, max_tokens, std::move(stop), ignore_eos, max_context);
          },
          "prompt"_a = py::none(), "max_tokens"_a = 256, "stop"_a = std::vector<std::string>{},
          "ignore_eos"_a = false, "max_context"_a = 0, "grammar"_a = py::none(),
          "json_schema"_a = py::none(), "images"_a = py::none(),
          R"(Generates text after prompt (a str, tokenized with BOS on a fresh session; a list of token
ids; None: continue from what the session holds). Returns an iterator of text pieces (whole
UTF-8); it ends at an end-of-generation token, a stop string (not included), max_tokens
(-1: no limit) or max_context (the most tokens a `full` session may hold; 0: none). Its
finish_reason is then "stop" or "length". The generated tokens join the session's history (an
end-of-generation token and the one that completed a stop string do not).
grammar: a GBNF grammar (llama.cpp's notation) the text must follow; json_schema: a JSON Schema
(a dict or JSON text) the text must validate against (docs/GRAMMAR.md: the keywords supported).
Either constrains this generation only; a malformed one raises ValueError naming its fault.
images: a list of images (paths, bytes or Engine.encode_image's Images; the engine needs an
mmproj), placed at the prompt's <__media__> markers in order, or before its text when it has
none (as `tova run --image` does).)")
      .def(
          "chat",
          [](const std::shared_ptr<Session>& s, const py::list& messages, int max_tokens,
             std::vector<std::string> stop, bool ignore_eos, int64_t max_context,
             const std::string& chat_template, const py::object& tools,
             std::optional<std::string> grammar, const py::object& json_schema) {
            ChatOptions o{.chat_template = chat_template};
            if (!tools.is_none()) {
              o.tools = py::module_::import("json").attr("dumps")(tools).cast<std::string>();
            }
            const std::vector<int32_t> prompt =
                unwrap(s->engine().chat_prompt(chat_messages(messages), o));
            constrain(*s, grammar, json_schema);
            // The conversation so far is fed once: what the session holds is kept when the
            // prompt extends it (the last answer as it was generated), else it starts afresh.
            unwrap(s->feed({}));
            const std::vector<int32_t>& h = s->history();
            if (h.size() <= prompt.size() && std::equal(h.begin(), h.end(), prompt.begin())) {
              s->queue(std::span<const int32_t>(prompt).subspan(h.size()));
            } else {
              unwrap(s->reset());
              s->queue(prompt);
            }
            return start_turn(s, max_tokens, std::move(stop), ignore_eos, max_context);
          },
          "messages"_a, "max_tokens"_a = 256, "stop"_a = std::vector<std::string>{},
          "ignore_eos"_a = false, "max_context"_a = 0, "chat_template"_a = "",
          "tools"_a = py::none(), "grammar"_a = py::none(), "json_schema"_a = py::none(),
          R"(The assistant's answer to a conversation: messages ([{"role": "system" | "user" |
"assistant" | "tool", "content": ...}], with OpenAI's reasoning_content, name, tool_call_id and
tool_calls where the template reads them) rendered with the chat template (chat_template: a
name such as "chatml" or a .jinja file; "": the model's own, chatml if it has none; tools: the
OpenAI tool list). Returns a Generator as generate() does. The session keeps the conversation:
when the next call's messages extend it (this answer appended, then a new user message) only
what they add is fed; otherwise it starts afresh.)");
}

// tova.Session: history, statistics, save, clone, reset.
void bind_session_state(py::class_<Session, std::shared_ptr<Session>>& cls) {
  cls
      .def_property_readonly("history", &Session::history,
                             "every token of the conversation (fed, then queued)")
      .def_property_readonly("n_seen", &Session::n_seen, "tokens the multi-state has seen")
      .def_property_readonly("n_vocab", &Session::n_vocab)
      .def_property_readonly(
          "cache", [](const Session& s) { return s.cache().label(); },
          "the cache options, e.g. 'tova k=64 exact f32'")
      .def(
          "stats", [](const Session& s) { return stats_dict(s.stats()); },
          R"(What the multi-state holds: policy, budget (None: unbounded), cache, kv_capacity (bytes
allocated), kv_held (bytes of the states held), n_seen, layers [{n_held, n_evicted}].)")
      .def(
          "save",
          [](Session& s, const std::string& path) {
            py::gil_scoped_release release;
            unwrap(s.feed({}));  // what is queued joins the state first
            return unwrap(s.save(path));
          },
          "path"_a,
          "Writes the session to a session file (atomically: PATH.tmp renamed over PATH), after "
          "feeding what is queued; returns its size. Engine.load_session continues it.")
      .def(
          "clone",
          [](const std::shared_ptr<Session>& s) {
            std::unique_ptr<Session> c = s->clone();
            // The copy keeps the original's engine alive through the original's deleter chain.
            return std::shared_ptr<Session>(c.release(), [keep = s](Session* p) { delete p; });
          },
          "An independent copy: continuing it gives what continuing this one would.")
      .def(
          "reset", [](Session& s) { unwrap(s.reset()); },
          "Forgets everything: a fresh multi-state, an empty history.");
}

// tova.Session and its Generator.
void bind_session(py::module_& m) {
  py::class_<Session, std::shared_ptr<Session>> cls(m, "Session", R"(One conversation's state: a multi-state
bounded by its policy, its sampler, the tokens it has seen. Made by Engine.session().)");
  bind_session_generation(cls);
  bind_session_text(cls);
  bind_session_state(cls);

  py::class_<Generator>(m, "Generator", "The text pieces of Session.generate().")
      .def("__iter__", &Generator::iter, py::return_value_policy::reference_internal)
      .def("__next__", &Generator::next)
      .def("cancel", &Generator::cancel,
           "Ends the generation now; returns the text it held back (a broken character, the "
           "beginning of a stop string).")
      .def_property_readonly("finish_reason", &Generator::finish_reason,
                             "None while generating, then 'stop', 'length' or 'cancelled'")
      .def_property_readonly("unfed", &Generator::unfed,
                             "the last sampled token when it ended the generation unfed, else -1")
      .def("stats", &Generator::stats,
           "n_prompt, prompt_seconds, n_generated, n_decoded, decode_seconds");
}

// tova.StateCache: the library's prefix-state cache (tova/state_cache.h). It keeps its engine
// alive; it is used under the GIL (one thread at a time, as the library requires).
struct PyStateCache {
  std::shared_ptr<Engine> engine;
  std::unique_ptr<StateCache> cache;
};

py::dict cache_stats_dict(const StateCacheStats& s) {
  return py::dict("n_held"_a = s.n_held, "held_bytes"_a = s.held_bytes,
                  "n_stored"_a = s.n_stored, "stored_bytes"_a = s.stored_bytes,
                  "n_spilled"_a = s.n_spilled, "n_restored"_a = s.n_restored,
                  "n_skipped"_a = s.n_skipped, "first_skip_reason"_a = s.first_skip_reason);
}

void bind_state_cache(py::module_& m) {
  py::class_<PyStateCache>(m, "StateCache", R"(Conversation states kept for reuse: a session put
here continues, later, any prompt that extends its tokens instead of feeding them again. Least
recently used states leave memory beyond max_bytes or max_states, to spill_dir (session files,
shareable by several processes of one model) when given, else dropped.

StateCache(engine, max_bytes=1 GiB, max_states=64, spill_dir=None, spill_max_bytes=4 GiB))")
      .def(py::init([](std::shared_ptr<Engine> e, uint64_t max_bytes, int max_states,
                       std::optional<std::string> spill_dir, uint64_t spill_max_bytes) {
             StateCacheOptions o{.max_bytes = max_bytes,
                                 .max_states = max_states,
                                 .spill_dir = spill_dir.value_or(""),
                                 .spill_max_bytes = spill_max_bytes};
             auto c = unwrap(StateCache::open(*e, o));
             return PyStateCache{.engine = std::move(e), .cache = std::move(c)};
           }),
           "engine"_a, "max_bytes"_a = uint64_t{1} << 30, "max_states"_a = 64,
           "spill_dir"_a = py::none(), "spill_max_bytes"_a = uint64_t{4} << 30)
      .def(
          "put",
          [](PyStateCache& c, Session& s, const std::string& id) {
            if (&s.engine() != c.engine.get()) {
              throw py::value_error("the session is another engine's");
            }
            unwrap(s.feed({}));  // what is queued joins the state first
            c.cache->put(s.clone(), id);
          },
          "session"_a, "id"_a = "",
          "Holds a copy of the session (after feeding what it has queued) for prompts that "
          "extend its tokens. Sessions whose states cannot be continued exactly (chunked "
          "prefill, a policy that chooses at a prompt's end) are not held.")
      .def(
          "session",
          [](PyStateCache& c, const py::object& prompt, const std::string& policy, int budget,
             const std::string& prefill, const std::string& positions, const std::string& kv_type,
             float temperature, int top_k, float top_p, float min_p, float repeat_penalty,
             int repeat_last_n, std::optional<uint64_t> seed, bool keep_images,
             int max_kept_images) {
            const std::vector<int32_t> tokens =
                py::isinstance<py::str>(prompt) ? c.engine->tokenize(prompt.cast<std::string>())
                                                : prompt.cast<std::vector<int32_t>>();
            SessionOptions o{
                .cache = with_kept_images(
                    unwrap(parse_cache_options(policy, budget, prefill, kv_type, positions)),
                    keep_images, max_kept_images),
                .sampling = sampler(temperature, top_k, top_p, min_p, repeat_penalty,
                                    repeat_last_n, seed)};
            std::unique_ptr<Session> s;
            int64_t reused = 0;
            if (const StateMatch match = c.cache->find(tokens, o.cache)) {
              if (auto t = c.cache->take(match, tokens, o); t.ok()) {
                s = std::move(*t);
                reused = match.n_tokens;
              }
            }
            if (!s) {
              o.n_prompt_hint = static_cast<int64_t>(tokens.size());
              s = unwrap(c.engine->new_session(o));
            }
            s->queue(std::span<const int32_t>(tokens).subspan(static_cast<size_t>(reused)));
            auto shared = std::shared_ptr<Session>(s.release(),
                                                   [keep = c.engine](Session* p) { delete p; });
            return py::make_tuple(shared, reused);
          },
          "prompt"_a, "policy"_a = "full", "budget"_a = 0, "prefill"_a = "exact",
          "positions"_a = "absolute", "kv_type"_a = "f32", "temperature"_a = 0.8f,
          "top_k"_a = 40, "top_p"_a = 0.95f, "min_p"_a = 0.05f, "repeat_penalty"_a = 1.0f,
          "repeat_last_n"_a = 64, "seed"_a = py::none(), "keep_images"_a = false,
          "max_kept_images"_a = 8,
          R"((session, n_reused): a session for prompt (a str, tokenized with BOS, or token ids) with
the prompt queued, continuing the longest held or spilled state of the same cache options whose
tokens the prompt extends (taken out of the cache; n_reused of its tokens are not fed again),
else a new one (n_reused 0). Options as Engine.session.)")
      .def("flush", [](PyStateCache& c) { c.cache->flush(); },
           "Every held state to spill_dir (forced to disk); memory is then empty.")
      .def("stats", [](const PyStateCache& c) { return cache_stats_dict(c.cache->stats()); },
           "n_held, held_bytes, n_stored, stored_bytes (spill_dir), n_spilled, n_restored, "
           "n_skipped, first_skip_reason.");
}

// tova.policies().
void bind_policies(py::module_& m) {
  m.def(
      "policies",
      [] {
        std::vector<std::string> names;
        for (const kv::PolicyDescription& p : kv::describe_policies()) names.push_back(p.form());
        return names;
      },
      "The registered KV policies (NAME, NAME:ARG, or BASE+NAME for a suffix such as merge).");
}

// tova.ppl(): perplexity sweeps (eval/perplexity).
void bind_ppl(py::module_& m) {
  m.def(
      "ppl",
      [](const std::shared_ptr<Engine>& e, std::optional<std::string> text,
         std::optional<std::vector<int32_t>> tokens, std::vector<std::string> policies,
         std::vector<int> budgets, int ctx, int chunks, const std::string& kv_type,
         const py::object& positions, int n_batch, bool batched, bool share_prefix, bool stream,
         int window, int max_full_ctx) {
        if (text.has_value() == tokens.has_value()) {
          throw py::value_error("give exactly one of text= and tokens=");
        }
        eval::PplOptions o{.policies = std::move(policies),
                           .budgets = std::move(budgets),
                           .ctx = ctx,
                           .chunks = chunks,
                           .kv_types = {unwrap(parse_kv_format(kv_type))},
                           .positions = {},
                           .n_batch = n_batch,
                           .batched = batched,
                           .share_prefix = share_prefix,
                           .stream = stream,
                           .window = window,
                           .max_full_ctx = max_full_ctx};
        if (text) {
          o.text = std::move(*text);
          o.text_label = "<text>";
        } else {
          o.tokens = std::move(*tokens);
          o.tokens_label = "<tokens>";
        }
        for (const std::string& name : str_list(positions)) {
          o.positions.push_back(unwrap(kv::parse_position_mode(name)));
        }
        Result<eval::PplReport> r = [&] {
          py::gil_scoped_release release;
          return eval::run_ppl(*e, o);
        }();
        return json_to_python(unwrap(std::move(r)).json);
      },
      "engine"_a, "text"_a = py::none(), "tokens"_a = py::none(),
      "policies"_a = std::vector<std::string>{"full"}, "budgets"_a = std::vector<int>{}, "ctx"_a = 0,
      "chunks"_a = 0, "kv_type"_a = "f32", "positions"_a = "absolute", "n_batch"_a = 32,
      "batched"_a = true, "share_prefix"_a = true, "stream"_a = false, "window"_a = 1024,
      "max_full_ctx"_a = 0,
      R"(Perplexity of every policy at every budget, as `tova ppl` computes it; returns the records
of its results.json ({"header": ..., "results": [...]}). text= is tokenized without BOS and cut
into chunks of ctx tokens (BOS first); tokens= are used as given. stream=True reads the whole
input as one sequence per configuration, windows of `window` positions; positions may then
list several modes.)");
}

// tova.eval(): long-context tasks (eval/task_run).
void bind_eval(py::module_& m) {
  m.def(
      "eval",
      [](const std::shared_ptr<Engine>& e, const py::object& tasks, std::vector<int> lengths,
         std::vector<int> depths, int samples, uint64_t seed, std::vector<std::string> policies,
         std::vector<int> budgets, const std::string& prefill, const std::string& positions,
         const std::string& kv_type, bool chat, const std::string& chat_template, int max_new,
         std::optional<std::string> template_json, std::optional<std::string> haystack,
         int n_batch, bool batched, bool share_prefix) {
        eval::TaskRunOptions o{.tasks = str_list(tasks),
                               .lengths = std::move(lengths),
                               .depths = std::move(depths),
                               .samples = samples,
                               .seed = seed,
                               .policies = std::move(policies),
                               .budgets = std::move(budgets),
                               .prefill = prefill,
                               .positions = positions,
                               .kv_type = kv_type,
                               .chat = chat,
                               .chat_template = chat_template,
                               .max_new = max_new,
                               .n_batch = n_batch,
                               .batched = batched,
                               .share_prefix = share_prefix};
        if (template_json) {
          o.template_text = std::move(*template_json);
          o.template_label = "<template>";
        }
        if (haystack) {
          o.haystack_text = std::move(*haystack);
          o.haystack_label = "<haystack>";
        }
        Result<eval::TaskReport> r = [&] {
          py::gil_scoped_release release;
          return eval::run_tasks(*e, o);
        }();
        eval::TaskReport rep = unwrap(std::move(r));
        // What `tova eval` prints as "tova: warning: ..." reaches Python as warnings too.
        const py::object warn = py::module_::import("warnings").attr("warn");
        for (const std::string& w : rep.warnings) {
          warn(spell_field(w, kKeywords), py::handle(PyExc_UserWarning), 2);
        }
        return json_to_python(rep.json);
      },
      "engine"_a, "tasks"_a, "lengths"_a = std::vector<int>{},
      "depths"_a = std::vector<int>{0, 25, 50, 75, 100}, "samples"_a = 10, "seed"_a = 42,
      "policies"_a = std::vector<std::string>{"full"}, "budgets"_a = std::vector<int>{},
      "prefill"_a = "exact", "positions"_a = "absolute", "kv_type"_a = "f32", "chat"_a = false,
      "chat_template"_a = "", "max_new"_a = 0, "template"_a = py::none(),
      "haystack"_a = py::none(), "n_batch"_a = 32, "batched"_a = true, "share_prefix"_a = true,
      R"(Long-context tasks (RULER's niah_*, vt, cwe, fwe; passkey) under every policy at every
budget, as `tova eval` runs them; returns its results.json (the run's settings, "accuracy" per
(task, length, policy, budget), "records" per sample and configuration). tasks: a name or a list; lengths in the model's tokens, prompt and answer
(empty: the trained context); samples per (task, length), their needles at depths (percent)
in turn; template: a needle template's JSON text; haystack: the text around the needles
(default: RULER's noise). Its warnings (a length past the trained context, a budget that
equals full, ...) are issued as UserWarning.)");
}

// tova.parse_tool_calls(): a model's answer taken apart into content and calls
// (include/tova/tool_calls.h), as tova serve does for a chat request with tools.
void bind_tool_calls(py::module_& m) {
  m.def(
      "parse_tool_calls",
      [](const py::object& text, const std::string& format, const py::object& tools) {
        std::optional<ToolCallFormat> f;
        std::string names;
        for (ToolCallFormat c : tool_call_formats()) {
          if (tool_call_format_name(c) == format) f = c;
          if (c != ToolCallFormat::kNone) names += std::string(tool_call_format_name(c)) + ", ";
        }
        if (!f) {
          throw py::value_error(
              fmt::format("format: unknown tool-call format '{}' ({}none)", format, names));
        }
        // bytes as the model wrote them (they may not be UTF-8), or a str.
        const std::string bytes = py::isinstance<py::bytes>(text)
                                      ? std::string(text.cast<py::bytes>())
                                      : text.cast<std::string>();
        std::vector<ToolDefinition> defs;
        if (!tools.is_none()) {
          const py::object dumps = py::module_::import("json").attr("dumps");
          for (const py::handle t : tools) {
            const py::dict tool = t.cast<py::dict>();
            const py::dict fn =
                tool.contains("function") ? tool["function"].cast<py::dict>() : tool;
            ToolDefinition d{.name = fn["name"].cast<std::string>()};
            if (fn.contains("parameters"))
              d.parameters = dumps(fn["parameters"]).cast<std::string>();
            defs.push_back(std::move(d));
          }
        }
        const ParsedToolCalls p = parse_tool_calls(*f, bytes, defs);
        py::list calls;
        for (const ToolCall& c : p.calls) {
          calls.append(py::dict("id"_a = model_text(c.id), "name"_a = model_text(c.name),
                                "arguments"_a = model_text(c.arguments)));
        }
        return py::dict("content"_a = model_text(p.content), "calls"_a = calls);
      },
      "text"_a, "format"_a, "tools"_a = py::none(),
      R"(A model's answer (str, or bytes as generated: they need not be UTF-8) taken apart as tova
serve does for a chat request with tools: {"content": str, "calls": [{"id", "name", "arguments"
(a JSON object as text)}]}. format: hermes, qwen3_coder, llama3, mistral, mistral_args, harmony, lfm2
or none; tools (OpenAI's list, optional) give the parameter types qwen3_coder needs. Bytes that
are not UTF-8 become U+FFFD in every field, as tova serve sends them.)");
}

}  // namespace

PYBIND11_MODULE(_tova, m) {
  m.doc() = "tova: bounded-memory LLM inference (compiled part; import tova)";
  bind_image(m);
  bind_engine(m);
  bind_session(m);
  bind_state_cache(m);
  bind_policies(m);
  bind_ppl(m);
  bind_eval(m);
  bind_tool_calls(m);
}

}  // namespace tova::python
