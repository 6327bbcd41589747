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

json series_json(const std::vector<Point>& points) {
  json out = json::array();
  for (const Point& p : points) out.push_back({rounded(p.x), rounded(p.y)});
  return out;
}

void check_shapes(const ExplorerData& d) {
  const auto t = static_cast<int64_t>(d.tokens.size());
  if (t == 0 || d.layers <= 0 || d.heads <= 0) {
    throw ValueError(fmt::format("explorer_html: needs tokens and at least one head, got {} tokens, "
                                 "{} layers, {} heads", t, d.layers, d.heads));
  }
  const auto expected = static_cast<size_t>(d.layers * d.heads * t * t);
  if (d.attention.size() != expected) {
    throw ValueError(fmt::format("explorer_html: attention has {} weights, (L,H,T,T) = ({},{},{},{}) "
                                 "needs {}", d.attention.size(), d.layers, d.heads, t, t, expected));
  }
  for (const HeadEntry& h : d.head_entries) {
    if (h.layer < 0 || h.layer >= d.layers || h.head < 0 || h.head >= d.heads) {
      throw ValueError(fmt::format("explorer_html: head entry {}.{} is outside {} layers x {} heads",
                                   h.layer, h.head, d.layers, d.heads));
    }
  }
}

// The data as JSON text that can sit inside a <script> element: every '<' is escaped (JSON
// allows "\u003c" wherever a '<' may appear, which is only inside strings), so no token can
// close the element.
std::string script_safe(const json& j) {
  const std::string text = j.dump();
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
    throw Error(fmt::format("explorer_html: the page template must hold '{}' exactly once", marker));
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
  std::vector<uint8_t> quantized(d.attention.size());
  std::transform(d.attention.begin(), d.attention.end(), quantized.begin(), quantize_weight);

  json facts = json::array();
  for (const auto& [name, value] : d.facts) facts.push_back({name, value});
  json heads = json::array();
  for (const HeadEntry& h : d.head_entries) heads.push_back(head_json(h));
  json formation = json::array();
  for (const Snapshot& s : d.formation) {
    json snapshot_heads = json::array();
    for (const HeadEntry& h : s.heads) snapshot_heads.push_back(head_json(h));
    formation.push_back({{"step", s.step}, {"heads", snapshot_heads}, {"in_context", in_context_json(s.in_context)}});
  }
  const json data = {
      {"title", d.title},
      {"facts", facts},
      {"tokens", d.tokens},
      {"attention",
       {{"layers", d.layers},
        {"heads", d.heads},
        {"t", d.tokens.size()},
        {"encoding", "uint8 base64, weight = byte / 255, (L,H,T,T) row-major"},
        {"levels", kAttentionLevels},
        {"data", base64(quantized)}}},
      {"heads", heads},
      {"in_context", in_context_json(d.in_context)},
      {"loss", {{"step", series_json(d.step_loss)}, {"train", series_json(d.eval_train_loss)},
                {"val", series_json(d.eval_val_loss)}}},
      {"formation", formation}};

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
