#include "eval/task_text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/hash.h"

namespace tova::eval {

uint64_t TaskRng::next() {
  uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t TaskRng::below(uint64_t n) {
  // Rejection keeps it uniform: draws past the largest multiple of n are redrawn.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next();
  while (x >= limit);
  return x % n;
}

double TaskRng::unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t sample_seed(uint64_t seed, std::string_view task, int length, int depth, int index) {
  const int64_t coords[] = {length, depth, index};
  uint64_t h = fnv1a(&seed, sizeof(seed));
  h = fnv1a(task.data(), task.size(), h);
  return fnv1a(coords, sizeof(coords), h);
}

Result<ItemKind> ItemKind::parse(std::string_view text) {
  ItemKind k;
  if (text == "adjective-noun" || text == "words") {
    k.type = Type::kWords;
    return k;
  }
  if (text == "word") {
    k.type = Type::kWord;
    return k;
  }
  // "N digit number" / "N-M digit number"
  constexpr std::string_view kTail = " digit number";
  if (text.size() > kTail.size() && text.substr(text.size() - kTail.size()) == kTail) {
    const std::string_view range = text.substr(0, text.size() - kTail.size());
    const size_t dash = range.find('-');
    auto num = [](std::string_view s, int& out) {
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
      return ec == std::errc() && p == s.data() + s.size();
    };
    int lo = 0, hi = 0;
    const bool ok = dash == std::string_view::npos
                        ? num(range, lo) && num(range, hi)
                        : num(range.substr(0, dash), lo) && num(range.substr(dash + 1), hi);
    if (ok && lo >= 1 && hi >= lo && hi <= 18) {
      k.type = Type::kNumber;
      k.min_digits = lo;
      k.max_digits = hi;
      return k;
    }
  }
  return make_error(
      "'{}' is not a key or value kind (valid: adjective-noun, word, N digit number, N-M digit "
      "number with 1 <= N <= M <= 18)",
      text);
}

std::string random_item(const ItemKind& kind, TaskRng& rng) {
  switch (kind.type) {
    case ItemKind::Type::kWords:
      return std::string(adjectives()[rng.below(adjectives().size())]) + "-" +
             std::string(nouns()[rng.below(nouns().size())]);
    case ItemKind::Type::kWord:
      return std::string(nouns()[rng.below(nouns().size())]);
    case ItemKind::Type::kNumber: {
      const int digits = static_cast<int>(rng.between(kind.min_digits, kind.max_digits));
      int64_t lo = 1;
      for (int i = 1; i < digits; ++i) lo *= 10;
      return std::to_string(rng.between(lo, lo * 10 - 1));
    }
  }
  return {};
}

const std::vector<std::string_view>& adjectives() {
  static const std::vector<std::string_view> w = {
      "able",    "ancient", "angry",   "bitter",  "blue",    "bold",    "brave",   "brief",
      "bright",  "broad",   "broken",  "busy",    "calm",    "careful", "cheap",   "clean",
      "clever",  "cold",    "cool",    "crisp",   "curious", "damp",    "dark",    "deep",
      "dry",     "dull",    "eager",   "early",   "empty",   "fair",    "famous",  "fancy",
      "fast",    "fierce",  "flat",    "fresh",   "friendly", "full",   "gentle",  "giant",
      "glad",    "golden",  "good",    "grand",   "green",   "grey",    "happy",   "hard",
      "heavy",   "hidden",  "high",    "hollow",  "honest",  "hot",     "huge",    "humble",
      "icy",     "idle",    "jolly",   "kind",    "large",   "late",    "lazy",    "light",
      "little",  "lively",  "lonely",  "long",    "loud",    "lucky",   "mild",    "modern",
      "narrow",  "neat",    "new",     "nice",    "noble",   "odd",     "old",     "orange",
      "pale",    "plain",   "polite",  "poor",    "proud",   "purple",  "quick",   "quiet",
      "rapid",   "rare",    "red",     "rich",    "rough",   "round",   "royal",   "rusty",
      "sad",     "safe",    "sharp",   "shiny",   "short",   "shy",     "silent",  "silver",
      "simple",  "slow",    "small",   "smooth",  "soft",    "solid",   "sour",    "spare",
      "steady",  "steep",   "sticky",  "strange", "strong",  "sweet",   "swift",   "tall",
      "tame",    "tender",  "thick",   "thin",    "tidy",    "tiny",    "tough",   "true",
      "vast",    "warm",    "weak",    "wet",     "white",   "wide",    "wild",    "wise",
      "yellow",  "young",   "zealous",
  };
  return w;
}

const std::vector<std::string_view>& nouns() {
  static const std::vector<std::string_view> w = {
      "anchor",   "apple",    "arrow",    "badge",    "basket",   "beach",    "bell",
      "bicycle",  "bird",     "blanket",  "boat",     "bottle",   "bridge",   "brush",
      "bucket",   "button",   "cabin",    "camera",   "candle",   "canyon",   "carpet",
      "castle",   "chair",    "cherry",   "circle",   "city",     "clock",    "cloud",
      "coat",     "coin",     "comet",    "copper",   "corner",   "cotton",   "cradle",
      "crystal",  "cup",      "curtain",  "desert",   "diamond",  "dolphin",  "door",
      "dragon",   "drum",     "eagle",    "engine",   "falcon",   "feather",  "fence",
      "field",    "flag",     "flame",    "flower",   "forest",   "fountain", "garden",
      "gate",     "glove",    "goat",     "guitar",   "hammer",   "harbor",   "hat",
      "helmet",   "hill",     "honey",    "horse",    "island",   "jacket",   "jar",
      "jewel",    "kettle",   "key",      "kite",     "ladder",   "lake",     "lamp",
      "lantern",  "leaf",     "lemon",    "letter",   "lion",     "map",      "marble",
      "meadow",   "mirror",   "moon",     "mountain", "needle",   "nest",     "ocean",
      "orchard",  "owl",      "paddle",   "palace",   "paper",    "parrot",   "pearl",
      "pencil",   "pepper",   "piano",    "pillow",   "planet",   "pocket",   "pond",
      "pumpkin",  "puzzle",   "rabbit",   "radio",    "rain",     "ribbon",   "river",
      "robot",    "rocket",   "rope",     "saddle",   "sail",     "shell",    "shield",
      "ship",     "shoe",     "silk",     "sled",     "spoon",    "star",     "stone",
      "storm",    "stove",    "string",   "sugar",    "sword",    "table",    "teapot",
      "temple",   "tiger",    "tower",    "train",    "tree",     "trumpet",  "tunnel",
      "turtle",   "umbrella", "valley",   "violin",   "wagon",    "wall",     "wheel",
      "whistle",  "window",   "wolf",     "yarn",
  };
  return w;
}

const std::vector<std::string_view>& common_words() {
  static const std::vector<std::string_view> w = [] {
    std::vector<std::string_view> all(adjectives().begin(), adjectives().end());
    all.insert(all.end(), nouns().begin(), nouns().end());
    static constexpr std::string_view kVerbs[] = {
        "accept", "answer", "arrive", "bake",  "borrow", "build",  "carry",  "catch", "change",
        "climb",  "cook",   "count",  "dance", "dig",    "draw",   "dream",  "drink", "drive",
        "enjoy",  "explain", "fill",  "find",  "fix",    "fly",    "follow", "gather", "grow",
        "guess",  "hang",   "help",   "hide",  "hold",   "hunt",   "invite", "jump",  "kick",
        "knock",  "laugh",  "learn",  "lift",  "listen", "march",  "mend",   "move",  "open",
        "paint",  "pick",   "plant",  "play",  "pour",   "pull",   "push",   "reach", "read",
        "repair", "ride",   "ring",   "row",   "run",    "sail",   "scrub",  "search", "send",
        "sew",    "shake",  "shout",  "sing",  "sit",    "sleep",  "smile",  "sneeze", "spin",
        "splash", "stand",  "stir",   "swim",  "talk",   "teach",  "throw",  "travel", "turn",
        "visit",  "wait",   "walk",   "wash",  "watch",  "whisper", "win",   "wish",  "write",
    };
    all.insert(all.end(), std::begin(kVerbs), std::end(kVerbs));
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return all;
  }();
  return w;
}

NeedleTemplate ruler_needle_template(bool single) {
  NeedleTemplate t;
  // RULER writes the needles in the plural ("One of the special magic numbers for ...") and
  // turns the rest of the prompt singular when one value is asked.
  t.needle = "One of the special magic numbers for {key} is: {value}.";
  if (single) {
    t.prefix =
        "A special magic number is hidden within the following text. Make sure to memorize it. "
        "I will quiz you about the number afterwards.";
    t.question = "What is the special magic number for {key} mentioned in the provided text?";
    t.answer_prefix = "The special magic number for {key} mentioned in the provided text is";
  } else {
    t.prefix =
        "Some special magic numbers are hidden within the following text. Make sure to memorize "
        "it. I will quiz you about the numbers afterwards.";
    t.question =
        "What are all the special magic numbers for {key} mentioned in the provided text?";
    t.answer_prefix = "The special magic numbers for {key} mentioned in the provided text are";
  }
  t.separator = "\n";
  t.key = ItemKind{.type = ItemKind::Type::kWords};
  t.value = ItemKind{.type = ItemKind::Type::kNumber, .min_digits = 7, .max_digits = 7};
  return t;
}

Result<NeedleTemplate> parse_needle_template(std::string_view text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return make_error("template '{}' is not valid JSON: {}", path, e.what());
  }
  if (!j.is_object()) return make_error("template '{}' is not a JSON object", path);
  NeedleTemplate t;
  t.separator = " ";
  t.key = ItemKind{.type = ItemKind::Type::kWord};
  t.value = ItemKind{.type = ItemKind::Type::kNumber, .min_digits = 7, .max_digits = 7};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) {
      return make_error("template '{}': field '{}' is not a string", path, it.key());
    }
    const std::string v = it.value().get<std::string>();
    const std::string& k = it.key();
    if (k == "needle") {
      t.needle = v;
    } else if (k == "question") {
      t.question = v;
    } else if (k == "answer_prefix") {
      t.answer_prefix = v;
    } else if (k == "prefix") {
      t.prefix = v;
    } else if (k == "separator") {
      t.separator = v;
    } else if (k == "key" || k == "value") {
      auto kind = ItemKind::parse(v);
      if (!kind.ok()) return make_error("template '{}': field '{}': {}", path, k, kind.message());
      (k == "key" ? t.key : t.value) = *kind;
    } else {
      return make_error(
          "template '{}': unknown field '{}' (valid: needle, question, answer_prefix, prefix, "
          "separator, key, value)",
          path, k);
    }
  }
  for (const auto& [name, field] : {std::pair<const char*, const std::string*>{"needle", &t.needle},
                                    {"question", &t.question},
                                    {"answer_prefix", &t.answer_prefix}}) {
    if (field->empty()) return make_error("template '{}' has no '{}'", path, name);
  }
  if (t.needle.find("{key}") == std::string::npos || t.needle.find("{value}") == std::string::npos) {
    return make_error("template '{}': the needle must contain {{key}} and {{value}}", path);
  }
  if (t.question.find("{key}") == std::string::npos) {
    return make_error("template '{}': the question must contain {{key}}", path);
  }
  return t;
}

std::string fill_in(std::string_view text, std::string_view key, std::string_view value) {
  std::string out;
  out.reserve(text.size() + key.size() + value.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 5, "{key}") == 0) {
      out += key;
      i += 5;
    } else if (text.compare(i, 7, "{value}") == 0) {
      out += value;
      i += 7;
    } else {
      out += text[i++];
    }
  }
  return out;
}

Haystack noise_haystack() {
  return Haystack{.units = {std::string(kNoiseBlock)}, .from_file = false, .source = "noise"};
}

Result<Haystack> file_haystack(std::string_view text, const std::string& name) {
  Haystack h{.from_file = true, .source = name};
  std::string cur;
  auto flush = [&] {
    while (!cur.empty() && cur.back() == ' ') cur.pop_back();
    if (!cur.empty()) h.units.push_back(std::move(cur));
    cur.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty() && cur.back() != ' ') cur += ' ';
      continue;
    }
    cur += c;
    const bool end_mark = c == '.' || c == '!' || c == '?';
    const bool next_space =
        i + 1 == text.size() || std::isspace(static_cast<unsigned char>(text[i + 1]));
    if (end_mark && next_space) flush();
  }
  flush();
  if (h.units.empty()) return make_error("haystack '{}' has no text", name);
  return h;
}

std::vector<std::string> haystack_units(const Haystack& h, size_t start, size_t n) {
  std::vector<std::string> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(h.units[(start + i) % h.units.size()]);
  return out;
}

}  // namespace tova::eval
