#include "tinygpt/report/explorer.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt_report_assets.hpp"

namespace tinygpt::report {
namespace {

using nlohmann::json;

std::string base64(const std::vector<uint8_t>& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = static_cast<uint32_t>(bytes[i]) << 16;
    if (n > 1) chunk |= static_cast<uint32_t>(bytes[i + 1]) << 8;
    if (n > 2) chunk |= bytes[i + 2];
    for (size_t k = 0; k < 4; ++k) {
      out += k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 63] : '=';
    }
  }
  return out;
}

// Curves and scores are drawn, not computed with: four significant decimals keep the page small.
double rounded(double x) { return std::isfinite(x) ? std::round(x * 1e4) / 1e4 : 0.0; }

json head_json(const HeadEntry& h) {
  json scores = json::object();
  for (const auto& [name, value] : h.scores) scores[name] = rounded(value);
  return {{"layer", h.layer}, {"head", h.head}, {"role", h.role}, {"scores", scores}};
}

json in_context_json(const std::optional<InContext>& c) {
  if (!c) return nullptr;
  return {{"first_copy_loss", rounded(c->first_copy_loss)},
          {"second_copy_loss", rounded(c->second_copy_loss)},
          {"ratio", rounded(c->ratio)}};
}

json heads_json(const std::vector<HeadEntry>& entries) {
  json out = json::array();
  for (const HeadEntry& h : entries) out.push_back(head_json(h));
  return out;
}

json formation_json(const std::vector<Snapshot>& snapshots) {
  json out = json::array();
  for (const Snapshot& s : snapshots) {
    out.push_back({{"step", s.step}, {"heads", heads_json(s.heads)}, {"in_context", in_context_json(s.in_context)}});
  }
  return out;
}

json composition_json(const std::vector<HeadLink>& links) {
  json out = json::array();
  for (const HeadLink& l : links) {
    out.push_back({{"from", {l.from_layer, l.from_head}}, {"to", {l.to_layer, l.to_head}},
                   {"score", l.score}, {"baseline", l.baseline}});
  }
  return out;
}

// (layers, heads, rows, columns) weights, one byte each (quantize_weight), base64.
json attention_json(const std::vector<float>& attention, int64_t layers, int64_t heads, size_t rows,
                    size_t columns) {
  std::vector<uint8_t> quantized(attention.size());
  std::transform(attention.begin(), attention.end(), quantized.begin(), quantize_weight);
  return {{"layers", layers},
          {"heads", heads},
          {"t", rows},
          {"s", columns},
          {"encoding", "uint8 base64, weight = byte / 255, (L,H,T,S) row-major"},
          {"levels", kAttentionLevels},
          {"data", base64(quantized)}};
}

json masks_json(const std::vector<MaskedPosition>& masks) {
  json out = json::array();
  for (const MaskedPosition& m : masks) {
    json top = json::array();
    for (const auto& [token, prob] : m.top) top.push_back({{"token", token}, {"prob", rounded(prob)}});
    out.push_back({{"position", m.position}, {"top", top}});
  }
  return out;
}

json series_json(const std::vector<Point>& points) {
  json out = json::array();
  for (const Point& p : points) out.push_back({rounded(p.x), rounded(p.y)});
  return out;
}

// `attention` holds (layers, heads, rows, columns) weights and `entries` name heads inside it.
void check_attention(const char* what, const std::vector<float>& attention, int64_t layers,
                     int64_t heads, int64_t rows, int64_t columns,
                     const std::vector<HeadEntry>& entries) {
  const auto expected = static_cast<size_t>(layers * heads * rows * columns);
  if (attention.size() != expected) {
    throw ValueError(Operation("explorer_html"),
                     fmt::format("{} has {} weights, (L,H,T,T) = ({},{},{},{}) needs {}",
                                 what, attention.size(), layers, heads, rows, columns, expected));
  }
  for (const HeadEntry& h : entries) {
    if (h.layer < 0 || h.layer >= layers || h.head < 0 || h.head >= heads) {
      throw ValueError(Operation("explorer_html"),
                       fmt::format("{} head entry {}.{} is outside {} layers x {} heads",
                                   what, h.layer, h.head, layers, heads));
    }
  }
}

// The composition arrows go from a head to a head of a later layer, both on the page.
void check_links(const ExplorerData& d) {
  for (const HeadLink& link : d.composition) {
    const auto outside = [&](int64_t layer, int64_t head) {
      return layer < 0 || layer >= d.layers || head < 0 || head >= d.heads;
    };
    if (outside(link.from_layer, link.from_head) || outside(link.to_layer, link.to_head) ||
        link.to_layer <= link.from_layer) {
      throw ValueError(Operation("explorer_html"),
                       fmt::format("composition link {}.{} -> {}.{} is not from a head to a head of "
                                   "a later layer in {} layers x {} heads", link.from_layer,
                                   link.from_head, link.to_layer, link.to_head, d.layers, d.heads));
    }
  }
}

void check_shapes(const ExplorerData& d) {
  const auto t = static_cast<int64_t>(d.tokens.size());
  if (t == 0 || d.layers <= 0 || d.heads <= 0) {
    throw ValueError(Operation("explorer_html"),
                     fmt::format("needs tokens and at least one head, got {} tokens, "
                                 "{} layers, {} heads", t, d.layers, d.heads));
  }
  check_attention("attention", d.attention, d.layers, d.heads, t, t, d.head_entries);
  check_links(d);
  for (const MaskedPosition& m : d.masks) {
    if (m.position < 0 || m.position >= t) {
      throw ValueError(Operation("explorer_html"), fmt::format("masked position {} of {} tokens", m.position, t));
    }
  }
  if (!d.cross) return;
  const CrossView& c = *d.cross;
  const auto outputs = static_cast<int64_t>(c.output_tokens.size());
  if (outputs == 0 || c.layers <= 0 || c.heads <= 0) {
    throw ValueError(Operation("explorer_html"),
                     fmt::format("cross-attention needs output tokens and at least one "
                                 "head, got {} tokens, {} layers, {} heads", outputs, c.layers, c.heads));
  }
  check_attention("cross-attention", c.attention, c.layers, c.heads, outputs, t, c.head_entries);
  if (!c.aligned.empty() && static_cast<int64_t>(c.aligned.size()) != outputs) {
    throw ValueError(Operation("explorer_html"), fmt::format("cross-attention aligns {} output tokens of {}",
                                 c.aligned.size(), outputs));
  }
  for (const auto& positions : c.aligned) {
    for (const int64_t j : positions) {
      if (j < 0 || j >= t) {
        throw ValueError(Operation("explorer_html"),
                         fmt::format("cross-attention aligns source position {} of {}", j, t));
      }
    }
  }
}

// The data as JSON text that can sit inside a <script> element: every '<' is escaped (JSON
// allows "\u003c" wherever a '<' may appear, which is only inside strings), so no token can
// close the element.
std::string script_safe(const json& j) {
  // A title that is a path not in UTF-8 shows its invalid bytes as U+FFFD.
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// `html` with the one occurrence of `marker` replaced by `text`.
void replace_marker(std::string& html, const std::string& marker, const std::string& text) {
  const size_t at = html.find(marker);
  if (at == std::string::npos || html.find(marker, at + 1) != std::string::npos) {
    throw Error(Operation("explorer_html"),
                fmt::format("the page template must hold '{}' exactly once", marker));
  }
  html.replace(at, marker.size(), text);
}

}  // namespace

uint8_t quantize_weight(float w) {
  const float clamped = std::isnan(w) ? 0.0f : std::clamp(w, 0.0f, 1.0f);
  return static_cast<uint8_t>(std::lround(clamped * kAttentionLevels));
}

std::string explorer_html(const ExplorerData& d) {
  check_shapes(d);
  json facts = json::array();
  for (const auto& [name, value] : d.facts) facts.push_back({name, value});
  json data = {
      {"title", d.title},
      {"facts", facts},
      {"tokens", d.tokens},
      {"causal", d.causal},
      {"attention", attention_json(d.attention, d.layers, d.heads, d.tokens.size(), d.tokens.size())},
      {"heads", heads_json(d.head_entries)},
      {"in_context", in_context_json(d.in_context)},
      {"loss", {{"step", series_json(d.step_loss)}, {"train", series_json(d.eval_train_loss)},
                {"val", series_json(d.eval_val_loss)}}},
      {"formation", formation_json(d.formation)},
      {"composition", composition_json(d.composition)},
      {"masks", masks_json(d.masks)},
      {"cross", nullptr}};
  if (d.cross) {
    const CrossView& c = *d.cross;
    data["cross"] = {
        {"output_tokens", c.output_tokens},
        {"aligned", c.aligned},
        {"attention", attention_json(c.attention, c.layers, c.heads, c.output_tokens.size(), d.tokens.size())},
        {"heads", heads_json(c.head_entries)},
        {"formation", formation_json(c.formation)},
        {"exact_match", series_json(c.exact_match)}};
  }

  // The template links its stylesheet and script as files (so the assets open as they are in a
  // browser while editing them); the page carries them inline instead.
  std::string html = assets::explorer_html;
  replace_marker(html, "<link rel=\"stylesheet\" href=\"explorer.css\">",
                 std::string("<style>\n") + assets::explorer_css + "</style>");
  replace_marker(html, "<script src=\"explorer.js\"></script>",
                 std::string("<script>\n") + assets::explorer_js + "</script>");
  replace_marker(html, "/*EXPLORER_DATA*/", script_safe(data));
  return html;
}

}  // namespace tinygpt::report
