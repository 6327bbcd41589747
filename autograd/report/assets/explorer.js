// The attention explorer: reads the page's embedded data (the <script id="explorer-data">
// element, written by tinygpt::report::explorer_html) and draws everything with the DOM, canvas
// and SVG. Nothing is fetched. window.tinygptExplorer exposes the state for tests.
"use strict";

(function () {
  // The SVG namespace, taken from a parsed <svg> so that the page holds no URL at all.
  const SVG_NS = (function () {
    const holder = document.createElement("div");
    holder.innerHTML = "<svg></svg>";
    return holder.firstChild.namespaceURI;
  })();
  const ROLE_SCORES = ["previous_token", "induction", "duplicate_token", "first_token",
    "current_token", "next_token", "self", "sink", "copy", "local", "entropy"];
  // An encoder's special tokens, shown as tokens of their own.
  const SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
  const ABLATION_RATIO = "ablated_second_copy_ratio";
  const ABLATION_LOSS = "ablated_loss_delta";
  const PALETTE = ["#c2410c", "#1d4ed8", "#15803d", "#7e22ce", "#b91c1c", "#0e7490",
    "#a16207", "#be185d"];
  // matplotlib's viridis at eleven evenly spaced points, as in the PNG plots (plot/colormap.cpp).
  const VIRIDIS = [[68, 1, 84], [72, 36, 117], [65, 68, 135], [53, 95, 141], [42, 120, 142],
    [33, 145, 140], [34, 168, 132], [68, 191, 112], [122, 209, 81], [189, 223, 38], [253, 231, 37]];

  // ---- helpers -------------------------------------------------------------------------------

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    return node;
  }

  function viridis(t) {
    if (!(t > 0)) return VIRIDIS[0];
    if (t >= 1) return VIRIDIS[VIRIDIS.length - 1];
    const pos = t * (VIRIDIS.length - 1);
    const i = Math.floor(pos);
    const f = pos - i;
    return VIRIDIS[i].map((a, k) => Math.round(a + f * (VIRIDIS[i + 1][k] - a)));
  }

  function fmt(x, digits) {
    return typeof x === "number" && isFinite(x) ? x.toFixed(digits === undefined ? 2 : digits) : "–";
  }

  // What a token looks like on the page: whitespace and control characters made visible.
  function tokenLabel(token) {
    if (token === " ") return { text: "\u2423", special: true };
    if (token === "\n") return { text: "\u21b5", special: true };
    if (token === "\t") return { text: "\u21e5", special: true };
    if (token.length === 1 && token.charCodeAt(0) < 32) {
      return { text: "\\x" + token.charCodeAt(0).toString(16).padStart(2, "0"), special: true };
    }
    if (SPECIAL_TOKENS.includes(token)) return { text: token, special: true };
    // A subword token: its spaces as middle dots, so " the" shows its leading space as "·the".
    if (token.length > 1) {
      return { text: token.replace(/ /g, "\u00b7").replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5"), special: false };
    }
    return { text: token, special: false };
  }

  function decodeBase64(text) {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; ++i) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  // Round tick values covering [lo, hi].
  function ticks(lo, hi, count) {
    if (!(hi > lo)) return [lo];
    const raw = (hi - lo) / count;
    const magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toFixed(10));
    return out;
  }

  // ---- data ----------------------------------------------------------------------------------

  const dataElement = document.getElementById("explorer-data");
  let data;
  try {
    data = JSON.parse(dataElement.textContent);
  } catch (e) {
    document.getElementById("explore").append(
      el("p", { className: "note", text: "This template has no data: tinygpt heads --html writes a page with it." }));
    return;
  }

  // weight(layer, head, query, key) of an embedded (L,H,T,S) attention block.
  function weightsOf(block) {
    const bytes = decodeBase64(block.data); // weight = byte / levels
    const heads = block.heads, rows = block.t, columns = block.s === undefined ? block.t : block.s;
    return (layer, head, query, key) => bytes[((layer * heads + head) * rows + query) * columns + key] / block.levels;
  }

  const L = data.attention.layers;
  const H = data.attention.heads;
  const T = data.attention.t;
  const causal = data.causal !== false;
  const weight = weightsOf(data.attention);
  const headAt = new Map(data.heads.map((h) => [h.layer + "." + h.head, h]));

  function headName(layer, head) {
    return layer + "." + head;
  }

  function headInfo(layer, head) {
    return headAt.get(headName(layer, head)) || { layer: layer, head: head, role: "?", scores: {} };
  }

  // The score that earned a head its role: its role score when the role is one, else its entropy.
  function roleScore(h) {
    if (h.scores.role_score !== undefined) return h.scores.role_score;
    return h.scores[h.role] !== undefined ? h.scores[h.role] : h.scores.entropy;
  }

  // Score columns: the role scores first, then any other number the heads carry (ablation apart).
  const scoreNames = (function () {
    const names = ROLE_SCORES.filter((n) => data.heads.some((h) => h.scores[n] !== undefined));
    for (const h of data.heads) {
      for (const n of Object.keys(h.scores)) {
        if (!names.includes(n) && n !== "role_score" && n !== ABLATION_RATIO && n !== ABLATION_LOSS) names.push(n);
      }
    }
    return names;
  })();

  // ---- state ---------------------------------------------------------------------------------

  const strongest = data.heads.reduce((best, h) => (best && roleScore(best) >= roleScore(h) ? best : h), null);
  const masks = data.masks || [];
  // An encoder's view starts at its first [MASK]; a language model's at its last token.
  const firstQuery = masks.length ? masks[0].position : T - 1;
  const state = {
    layer: strongest ? strongest.layer : 0,
    head: strongest ? strongest.head : 0, // a head index, or "all" for the small multiples
    query: firstQuery,                     // the token whose attention is shown
    pinned: firstQuery,                    // where the query returns when the pointer leaves
  };
  // The head score whose formation is drawn beside the previous-token one: an encoder's copy
  // heads, a language model's induction heads.
  const secondScore = data.heads.some((h) => h.scores.copy !== undefined) ? "copy" : "induction";

  // ---- an encoder-decoder's page: the main view is its encoder's ----------------------------

  if (data.cross) {
    document.querySelector("#explore h2").textContent = "Where a source token looks (encoder self-attention)";
    document.querySelector("#explore .hint").textContent = "Hover over a source token (click to pin " +
      "it): the shading is the attention it pays every source token, before and after it, in the chosen " +
      "encoder head. Pick \u201call heads\u201d to see every head of the layer at once.";
    document.querySelector("#picker-section h2").textContent = "Encoder heads";
    document.querySelector("#grids-section .hint").textContent = "Each encoder head's attention on the " +
      "source: row = query token, column = key token (viridis, 0 dark to 1 bright). Click a head to explore it.";
    for (const id of ["formation-section", "ablation-section", "composition-section"]) document.getElementById(id).hidden = true;
  } else if (!causal) {
    document.querySelector("#explore .hint").textContent = "Hover over a token (click to pin it): the " +
      "shading is the attention it pays every token, before and after it ([CLS] and [SEP] included), " +
      "in the chosen head. Pick \u201call heads\u201d to see every head of the layer at once.";
    for (const id of ["ablation-section", "composition-section"]) document.getElementById(id).hidden = true;
  }

  // ---- header --------------------------------------------------------------------------------

  document.getElementById("title").textContent = data.title || "";
  const facts = document.getElementById("facts");
  for (const [name, value] of data.facts) {
    facts.append(el("span", {}, [name + " ", el("b", { text: value })]));
  }
  if (data.in_context) {
    const c = data.in_context;
    document.getElementById("in-context").textContent =
      "In-context: on random sequences repeated twice, mean loss " + fmt(c.first_copy_loss, 3) +
      " on the first copy, " + fmt(c.second_copy_loss, 3) + " on the second (" +
      fmt(100 * c.ratio, 0) + "% of the first).";
  }

  // ---- tokens and shading --------------------------------------------------------------------

  const tokenStrip = document.getElementById("tokens");
  const multiples = document.getElementById("multiples");
  const layerSelect = document.getElementById("layer-select");
  const headSelect = document.getElementById("head-select");

  // A strip of `tokens`; hovering token i calls hover(i), clicking it pin(i), leaving the strip
  // leave() (or nothing without handlers).
  function makeStrip(container, tokens, hover, pin, leave) {
    container.replaceChildren();
    tokens.forEach((token, i) => {
      const label = tokenLabel(token);
      const span = el("span", {
        className: "tok" + (label.special ? " special" : ""),
        "data-index": i,
        title: "token " + i + ": " + JSON.stringify(token),
        text: label.text,
      });
      if (hover) span.addEventListener("mouseenter", () => hover(i));
      if (pin) span.addEventListener("click", () => pin(i));
      container.append(span);
    });
    if (leave) container.addEventListener("mouseleave", leave);
  }

  // Shades token j of a strip by w(j) (w null: no shading); the values shown are kept in each
  // token's data-weight.
  function shadeTokens(container, w) {
    const spans = container.children;
    for (let j = 0; j < spans.length; ++j) {
      const span = spans[j];
      if (w === null) {
        span.style.backgroundColor = "";
        span.style.color = "";
        delete span.dataset.weight;
        continue;
      }
      const value = w(j);
      span.dataset.weight = value.toFixed(6);
      span.style.backgroundColor = "rgba(234, 88, 12, " + Math.min(1, value).toFixed(3) + ")";
      span.style.color = value > 0.55 ? "#fff" : "";
    }
  }

  // Frames the query token and the pinned one; with `future`, greys the tokens after the query
  // (which a causal head cannot see).
  function markQuery(container, query, pinned, future) {
    const spans = container.children;
    for (let j = 0; j < spans.length; ++j) {
      spans[j].classList.toggle("query", j === query);
      spans[j].classList.toggle("pinned", j === pinned && pinned !== query);
      spans[j].classList.toggle("future", future && j > query);
    }
  }

  // A self-attention strip shaded with the attention row of state.query in (layer, head).
  function shadeStrip(container, layer, head) {
    markQuery(container, state.query, state.pinned, causal);
    shadeTokens(container, head === null ? null : (j) => weight(layer, head, state.query, j));
  }

  function buildMultiples() {
    multiples.replaceChildren();
    if (state.head !== "all") return;
    for (let h = 0; h < H; ++h) {
      const info = headInfo(state.layer, h);
      const strip = el("div", { className: "tokens", "data-head": h });
      makeStrip(strip, data.tokens, setQuery, pin, () => setQuery(state.pinned));
      const title = el("h3", {}, ["head " + h + " ", el("span", { text: info.role + " " + fmt(roleScore(info)) })]);
      title.addEventListener("click", () => select(state.layer, h));
      multiples.append(el("div", { className: "multiple", "data-head": h }, [title, strip]));
    }
  }

  function render() {
    const all = state.head === "all";
    shadeStrip(tokenStrip, state.layer, all ? null : state.head);
    for (const strip of multiples.querySelectorAll(".tokens")) {
      shadeStrip(strip, state.layer, Number(strip.dataset.head));
    }
    const token = JSON.stringify(data.tokens[state.query]);
    document.getElementById("selection-label").textContent = all
      ? "layer " + state.layer + ", all heads; attention from token " + state.query + " " + token
      : "layer " + state.layer + " head " + state.head + " (" + headInfo(state.layer, state.head).role +
        "); attention from token " + state.query + " " + token;
    for (const row of document.querySelectorAll("#head-picker tbody tr")) {
      row.classList.toggle("selected", Number(row.dataset.layer) === state.layer &&
        (all || Number(row.dataset.head) === state.head));
    }
    for (const fig of document.querySelectorAll("#grids .heatmap")) {
      const l = Number(fig.dataset.layer), h = Number(fig.dataset.head);
      fig.classList.toggle("selected", l === state.layer && (all || h === state.head));
      paintHeatmap(fig.querySelector("canvas"), T, T, cell, (i, j) => weight(l, h, i, j), state.query);
    }
    drawFormation();
  }

  // Hovering token i of a view shows its row; clicking pins it, where the query returns when the
  // pointer leaves. `view` holds query and pinned; `draw` redraws it.
  function queryHandlers(view, draw) {
    return {
      setQuery: (i) => {
        if (i === view.query) return;
        view.query = i;
        draw();
      },
      pin: (i) => {
        view.pinned = i;
        view.query = i;
        draw();
      },
    };
  }

  const { setQuery, pin } = queryHandlers(state, () => render());

  function select(layer, head) {
    state.layer = layer;
    state.head = head;
    layerSelect.value = String(layer);
    fillHeadSelect();
    headSelect.value = String(head);
    buildMultiples();
    render();
  }

  for (let l = 0; l < L; ++l) layerSelect.append(el("option", { value: l, text: "layer " + l }));
  function fillHeadSelect() {
    headSelect.replaceChildren(el("option", { value: "all", text: "all heads" }));
    for (let h = 0; h < H; ++h) {
      const info = headInfo(Number(layerSelect.value), h);
      headSelect.append(el("option", { value: h, text: "head " + h + ": " + info.role }));
    }
  }
  layerSelect.addEventListener("change", () => select(Number(layerSelect.value), state.head));
  headSelect.addEventListener("change", () => {
    select(state.layer, headSelect.value === "all" ? "all" : Number(headSelect.value));
  });
  makeStrip(tokenStrip, data.tokens, setQuery, pin, () => setQuery(state.pinned));

  // ---- head picker and role table ------------------------------------------------------------

  function scoreCell(value, isRole) {
    const cell = el("td", { className: "score" + (isRole ? " role-score" : ""), text: fmt(value) });
    if (typeof value === "number" && value >= 0 && value <= 1) {
      cell.append(el("span", { className: "bar", style: "width: calc((100% - 8px) * " + value.toFixed(3) + ")" }));
    }
    return cell;
  }

  (function buildPicker() {
    const table = document.getElementById("head-picker");
    const header = el("tr", {}, [el("th", { className: "text", text: "head" }),
      el("th", { className: "text", text: "role" }), el("th", { text: "role score" })]);
    for (const n of scoreNames) header.append(el("th", { text: n.replace(/_/g, " ") }));
    table.append(el("thead", {}, [header]));
    const body = el("tbody");
    for (const h of data.heads) {
      const row = el("tr", { "data-layer": h.layer, "data-head": h.head, "data-role": h.role }, [
        el("td", { className: "text", text: "L" + h.layer + " H" + h.head }),
        el("td", { className: "text", text: h.role }),
        scoreCell(roleScore(h), true)]);
      for (const n of scoreNames) row.append(scoreCell(h.scores[n], n.replace(/_/g, "-") === h.role));
      row.addEventListener("click", () => select(h.layer, h.head));
      body.append(row);
    }
    table.append(body);
  })();

  (function buildRoleTable() {
    const table = document.getElementById("role-table");
    const roles = new Map();
    for (const h of data.heads) {
      if (!roles.has(h.role)) roles.set(h.role, []);
      roles.get(h.role).push(h);
    }
    table.append(el("thead", {}, [el("tr", {}, [el("th", { className: "text", text: "role" }),
      el("th", { text: "heads" }), el("th", { className: "text", text: "which (score)" })])]));
    const body = el("tbody");
    for (const [role, heads] of [...roles.entries()].sort((a, b) => b[1].length - a[1].length)) {
      const which = heads.map((h) => "L" + h.layer + " H" + h.head + " (" + fmt(roleScore(h)) + ")").join(", ");
      body.append(el("tr", { "data-role": role }, [el("td", { className: "text", text: role }),
        el("td", { text: String(heads.length) }), el("td", { className: "text", text: which })]));
    }
    table.append(body);
    if (data.in_context) {
      document.getElementById("in-context-detail").textContent =
        "Second-copy loss / first-copy loss: " + fmt(100 * data.in_context.ratio, 0) +
        "% (far below 100% when induction heads copy from the first copy).";
    }
  })();

  // ---- layer grids ---------------------------------------------------------------------------

  // A heatmap cell's size in pixels: the grids stay about 192 pixels across, cells at most `most`.
  function cellSize(rows, columns, most) {
    return Math.max(2, Math.min(most, Math.floor(192 / Math.max(rows, columns))));
  }
  const cell = cellSize(T, T, 8);

  // Paints w(i, j) (row i, column j) in viridis on `canvas`, row `marked` framed.
  function paintHeatmap(canvas, rows, columns, size, w, marked) {
    const ctx = canvas.getContext("2d");
    const image = ctx.createImageData(columns * size, rows * size);
    for (let i = 0; i < rows; ++i) {
      for (let j = 0; j < columns; ++j) {
        const [r, g, b] = viridis(w(i, j));
        for (let y = i * size; y < (i + 1) * size; ++y) {
          for (let x = j * size; x < (j + 1) * size; ++x) {
            const o = (y * columns * size + x) * 4;
            image.data[o] = r; image.data[o + 1] = g; image.data[o + 2] = b; image.data[o + 3] = 255;
          }
        }
      }
    }
    ctx.putImageData(image, 0, 0);
    ctx.strokeStyle = "#ff3b30";
    ctx.lineWidth = 1;
    ctx.strokeRect(0.5, marked * size + 0.5, columns * size - 1, size - 1);
  }

  // One row of heatmaps per layer in `container`, a figure per head (painted by the caller's
  // render); hovering a cell describes it under the layer, clicking a head selects it.
  function buildGrids(container, g) {
    for (let l = 0; l < g.layers; ++l) {
      const grid = el("div", { className: "grid" });
      const readout = el("div", { className: "grid-readout", text: "\u00a0" });
      for (let h = 0; h < g.heads; ++h) {
        const canvas = el("canvas", { width: g.columns * g.size, height: g.rows * g.size });
        const fig = el("figure", { className: "heatmap", "data-layer": l, "data-head": h }, [
          el("figcaption", { text: g.caption(l, h) }), canvas]);
        fig.addEventListener("click", () => g.select(l, h));
        canvas.addEventListener("mousemove", (event) => {
          const rect = canvas.getBoundingClientRect();
          const j = Math.floor((event.clientX - rect.left) / rect.width * g.columns);
          const i = Math.floor((event.clientY - rect.top) / rect.height * g.rows);
          if (i < 0 || j < 0 || i >= g.rows || j >= g.columns) return;
          readout.textContent = g.describe(l, h, i, j);
        });
        grid.append(fig);
      }
      container.append(el("div", { className: "layer" }, [el("h3", { text: "layer " + l }), grid, readout]));
    }
  }

  buildGrids(document.getElementById("grids"), {
    layers: L, heads: H, rows: T, columns: T, size: cell,
    caption: (l, h) => "head " + h + ": " + headInfo(l, h).role + " " + fmt(roleScore(headInfo(l, h))),
    select: select,
    describe: (l, h, i, j) => "layer " + l + " head " + h + ": token " + i + " " + JSON.stringify(data.tokens[i]) +
      " \u2192 token " + j + " " + JSON.stringify(data.tokens[j]) + ": " + fmt(weight(l, h, i, j), 3),
  });

  // ---- charts --------------------------------------------------------------------------------

  // A line chart over [xMin, xMax]: every chart shares the training steps' x range so that the
  // formation curves line up with the loss curve.
  const stepRange = (function () {
    const xs = [];
    for (const s of [data.loss.step, data.loss.train, data.loss.val]) for (const p of s) xs.push(p[0]);
    for (const s of data.formation) xs.push(s.step);
    if (data.cross) for (const s of data.cross.formation) xs.push(s.step);
    return xs.length ? [0, Math.max(...xs)] : [0, 1];
  })();

  function lineChart(container, series, options) {
    const width = 1080, height = options.height || 240;
    const m = { left: 52, right: 16, top: 10, bottom: 32 };
    const [x0, x1] = stepRange;
    let y0 = options.yMin, y1 = options.yMax;
    const ys = series.flatMap((s) => s.points.map((p) => p[1])).filter((y) => isFinite(y));
    if (y0 === undefined) y0 = ys.length ? Math.min(...ys) : 0;
    if (y1 === undefined) y1 = ys.length ? Math.max(...ys) : 1;
    if (!(y1 > y0)) y1 = y0 + 1;
    const sx = (x) => m.left + (x - x0) / (x1 - x0 || 1) * (width - m.left - m.right);
    const sy = (y) => height - m.bottom - (y - y0) / (y1 - y0) * (height - m.top - m.bottom);
    const root = svg("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height,
      role: "img", "aria-label": options.label });
    for (const y of ticks(y0, y1, 5)) {
      root.append(svg("line", { class: "grid-line", x1: m.left, x2: width - m.right, y1: sy(y), y2: sy(y) }));
      const text = svg("text", { x: m.left - 6, y: sy(y) + 4, "text-anchor": "end", fill: "#5d6470" });
      text.textContent = +y.toFixed(3);
      root.append(text);
    }
    for (const x of ticks(x0, x1, 8)) {
      root.append(svg("line", { class: "grid-line", x1: sx(x), x2: sx(x), y1: m.top, y2: height - m.bottom }));
      const text = svg("text", { x: sx(x), y: height - m.bottom + 14, "text-anchor": "middle", fill: "#5d6470" });
      text.textContent = x;
      root.append(text);
    }
    const xLabel = svg("text", { x: (m.left + width - m.right) / 2, y: height - 4, "text-anchor": "middle", fill: "#5d6470" });
    xLabel.textContent = "step";
    root.append(xLabel);
    root.append(svg("path", { class: "axis", fill: "none",
      d: "M" + m.left + " " + m.top + "V" + (height - m.bottom) + "H" + (width - m.right) }));
    for (const s of series) {
      if (!s.points.length) continue;
      const d = s.points.map((p, i) => (i ? "L" : "M") + sx(p[0]).toFixed(1) + " " + sy(p[1]).toFixed(1)).join("");
      const path = svg("path", { d: d, fill: "none", stroke: s.color, "stroke-width": s.width || 1.5,
        "stroke-dasharray": s.dash || "", opacity: s.opacity || 1, "data-series": s.name });
      path.append(svg("title", {}));
      path.lastChild.textContent = s.name;
      root.append(path);
      if (s.markers) {
        for (const p of s.points) root.append(svg("circle", { cx: sx(p[0]), cy: sy(p[1]), r: 2.5, fill: s.color }));
      }
    }
    const legend = el("div", { className: "legend" });
    for (const s of series.filter((s) => s.legend !== false)) {
      // The swatch is a piece of the line itself: colour and dash.
      const swatch = svg("svg", { width: 22, height: 6, "data-legend": s.legendName || s.name });
      swatch.append(svg("line", { x1: 0, x2: 22, y1: 3, y2: 3, stroke: s.color, "stroke-width": Math.max(2.5, s.width || 0),
        "stroke-dasharray": s.dash || "", opacity: s.opacity || 1 }));
      legend.append(el("span", {}, [swatch, s.legendName || s.name]));
    }
    container.append(el("div", { className: "chart" }, [el("div", { className: "chart-title", text: options.label }), root, legend]));
  }

  function scoreOf(snapshot, layer, head, name) {
    const h = snapshot.heads.find((x) => x.layer === layer && x.head === head);
    return h && typeof h.scores[name] === "number" ? h.scores[name] : NaN;
  }

  function drawFormation() {
    const container = document.getElementById("formation");
    container.replaceChildren();
    if (data.cross) return; // an encoder-decoder's heads form in the cross-attention view
    const snaps = data.formation;
    if (!snaps.length) {
      container.append(el("p", { className: "note", text:
        "This run's log.jsonl has no head scores per evaluation, so there are no formation curves." }));
      return;
    }
    const best = (name, layer) => snaps.map((s) => [s.step, Math.max(...s.heads
      .filter((h) => layer === undefined || h.layer === layer).map((h) => h.scores[name])
      .filter((v) => typeof v === "number"))]).filter((p) => isFinite(p[1]));
    const lines = [];
    for (let l = 0; l < L; ++l) {
      lines.push({ name: "best previous-token, layer " + l, points: best("previous_token", l), color: PALETTE[(2 * l) % PALETTE.length] });
    }
    lines.push({ name: "best " + secondScore, points: best(secondScore), color: PALETTE[1] });
    const ratio = snaps.filter((s) => s.in_context).map((s) => [s.step, s.in_context.ratio]);
    if (ratio.length) lines.push({ name: "in-context ratio (second / first copy loss)", points: ratio, color: "#1d1f24", dash: "5 3" });
    lineChart(container, lines, { label: "Best head scores and the in-context ratio", yMin: 0, yMax: Math.max(1, ...ratio.map((p) => p[1])) });

    // One colour (and dash) per score, as in the chart above; with every head of a layer shown,
    // one legend entry per score and each line named on hover.
    const heads = state.head === "all" ? [...Array(H).keys()] : [state.head];
    const own = [];
    for (const [name, color, dash] of [["previous_token", PALETTE[0], ""], [secondScore, PALETTE[1], "4 2"]]) {
      heads.forEach((h, k) => {
        own.push({ name: "L" + state.layer + " H" + h + " " + name.replace("_", "-"),
          legendName: heads.length > 1 ? name.replace("_", "-") + " (each head)" : undefined,
          points: snaps.map((s) => [s.step, scoreOf(s, state.layer, h, name)]).filter((p) => isFinite(p[1])),
          color: color, dash: dash, opacity: heads.length > 1 ? 0.7 : 1, legend: k === 0 });
      });
    }
    lineChart(container, own, { label: "The selected head" + (heads.length > 1 ? "s" : "") +
      ": previous-token and " + secondScore + " scores", yMin: 0, yMax: 1, height: 200 });
  }

  (function drawLoss() {
    const container = document.getElementById("loss");
    const loss = data.loss;
    if (!loss.step.length && !loss.train.length && !loss.val.length) {
      container.append(el("p", { className: "note", text: "No training log (log.jsonl) beside this model." }));
      return;
    }
    lineChart(container, [
      { name: "training loss per step", points: loss.step, color: "#9aa3b2", width: 1 },
      { name: "train (evaluation)", points: loss.train, color: PALETTE[1], markers: true },
      { name: "validation (evaluation)", points: loss.val, color: PALETTE[0], markers: true },
    ], { label: "Cross-entropy loss (nats per character)" });
  })();

  // ---- ablation ------------------------------------------------------------------------------

  (function buildAblation() {
    if (data.cross) return; // an encoder-decoder's heads are removed in the cross-attention view
    const container = document.getElementById("ablation");
    const ablated = data.heads.filter((h) => typeof h.scores[ABLATION_RATIO] === "number" ||
      typeof h.scores[ABLATION_LOSS] === "number");
    if (!ablated.length) {
      container.append(el("p", { className: "note", text:
        "No ablation results in this report (tinygpt heads --ablate measures each head by removing it)." }));
      return;
    }
    const base = data.in_context ? data.in_context.ratio : NaN;
    container.append(el("p", { className: "hint", text: "Each head removed in turn: the in-context ratio " +
      "(second / first copy loss; " + fmt(100 * base, 0) + "% with every head) and the change of the loss on real text." }));
    const table = el("table", { id: "ablation-table", className: "scores" });
    table.append(el("thead", {}, [el("tr", {}, [el("th", { className: "text", text: "head removed" }),
      el("th", { className: "text", text: "role" }), el("th", { text: "in-context ratio" }),
      el("th", { text: "change" }), el("th", { text: "loss change" })])]));
    const body = el("tbody");
    const sorted = [...ablated].sort((a, b) => (b.scores[ABLATION_RATIO] || 0) - (a.scores[ABLATION_RATIO] || 0));
    for (const h of sorted) {
      const r = h.scores[ABLATION_RATIO];
      body.append(el("tr", { "data-layer": h.layer, "data-head": h.head, "data-ratio": r,
        "data-loss-delta": h.scores[ABLATION_LOSS] }, [
        el("td", { className: "text", text: "L" + h.layer + " H" + h.head }),
        el("td", { className: "text", text: h.role }),
        scoreCell(r, false),
        el("td", { text: isFinite(base) && typeof r === "number" ? (r >= base ? "+" : "") + fmt(100 * (r - base), 0) + " pts" : "–" }),
        el("td", { text: typeof h.scores[ABLATION_LOSS] === "number" ? (h.scores[ABLATION_LOSS] >= 0 ? "+" : "") + fmt(h.scores[ABLATION_LOSS], 3) : "–" })]));
    }
    table.append(body);
    container.append(table);
  })();

  // Heads as dots, one column per layer, and an arrow from each writer to each reader of the top
  // K-composition pairs, its width growing with the score; clicking a dot explores that head.
  (function buildComposition() {
    if (data.cross) return; // composition is scored for a GPT's heads
    const container = document.getElementById("composition");
    const links = data.composition || [];
    if (!links.length) {
      container.append(el("p", { className: "note", text:
        "No composition scores in this report (tinygpt heads --composition --html adds them)." }));
      return;
    }
    const baseline = links.reduce((sum, l) => sum + l.baseline, 0) / links.length;
    container.append(el("p", { className: "hint", text: "The " + links.length + " head pairs with the " +
      "highest K-composition (how much a head's keys read what an earlier head writes); random " +
      "matrices of the same shapes score about " + fmt(baseline, 2) + "." }));
    const colGap = 260, rowGap = 30, side = 150, m = 20; // side: room for the outer labels
    const x = (layer) => side + layer * colGap, y = (head) => m + head * rowGap;
    const width = 2 * side + (L - 1) * colGap, height = 2 * m + (H - 1) * rowGap;
    const root = svg("svg", { id: "composition-arrows", viewBox: "0 0 " + width + " " + height,
      width: width, height: height });
    const top = Math.max(...links.map((l) => l.score));
    for (const l of links) {
      const x1 = x(l.from[0]) + 8, y1 = y(l.from[1]), x2 = x(l.to[0]) - 8, y2 = y(l.to[1]);
      const line = svg("line", { class: "composition-arrow", x1: x1, y1: y1, x2: x2, y2: y2, stroke: "#c2410c",
        "stroke-width": 0.5 + 4 * l.score / top, "data-from": l.from.join("."), "data-to": l.to.join("."),
        "data-score": l.score });
      // The head of the arrow: a triangle at the reader, drawn as a path (the page links nothing).
      const len = Math.hypot(x2 - x1, y2 - y1), ux = (x2 - x1) / len, uy = (y2 - y1) / len;
      const bx = x2 - 9 * ux, by = y2 - 9 * uy;
      root.append(svg("path", { class: "composition-arrow-head", fill: "#c2410c", d: "M " + x2 + " " + y2 +
        " L " + (bx - 4 * uy) + " " + (by + 4 * ux) + " L " + (bx + 4 * uy) + " " + (by - 4 * ux) + " Z" }));
      const title = svg("title", {});
      title.textContent = "L" + l.from[0] + " H" + l.from[1] + " \u2192 L" + l.to[0] + " H" + l.to[1] +
        ": K-composition " + fmt(l.score, 3) + " (random " + fmt(l.baseline, 3) + ")";
      line.append(title);
      root.append(line);
    }
    for (let layer = 0; layer < L; ++layer) {
      for (let head = 0; head < H; ++head) {
        const dot = svg("circle", { class: "composition-head", cx: x(layer), cy: y(head), r: 6,
          fill: "#1f3a93", "data-layer": layer, "data-head": head });
        dot.addEventListener("click", () => select(layer, head));
        root.append(dot);
        const label = svg("text", { x: x(layer) + (layer === 0 ? -12 : 12), y: y(head) + 4,
          "text-anchor": layer === 0 ? "end" : "start", fill: "#5d6470" });
        label.textContent = "L" + layer + " H" + head + " " + headInfo(layer, head).role;
        root.append(label);
      }
    }
    container.append(root);
  })();

  // ---- cross-attention (an encoder-decoder) --------------------------------------------------

  const cross = (function buildCross() {
    if (!data.cross) return null;
    const c = data.cross;
    document.getElementById("cross-section").hidden = false;
    const CL = c.attention.layers, CH = c.attention.heads, CT = c.attention.t, S = c.attention.s;
    const crossWeight = weightsOf(c.attention);
    const crossAt = new Map(c.heads.map((h) => [headName(h.layer, h.head), h]));
    const scoreOfHead = (l, h, name) => {
      const entry = crossAt.get(headName(l, h));
      return entry && typeof entry.scores[name] === "number" ? entry.scores[name] : NaN;
    };
    const ablated = c.heads.some((h) => typeof h.scores.ablated_exact_match_drop === "number");
    const best = c.heads.reduce((b, h) => (b && !(h.scores.alignment > b.scores.alignment) ? b : h), null);
    const cs = { layer: best ? best.layer : 0, head: best ? best.head : 0, query: 0, pinned: 0 };
    const output = document.getElementById("cross-output");
    const source = document.getElementById("cross-source");
    const layerSel = document.getElementById("cross-layer-select");
    const headSel = document.getElementById("cross-head-select");
    const size = cellSize(CT, S, 12); // a pair is short: larger cells
    const alignedWith = (i) => (c.aligned.length ? c.aligned[i] : []);

    function show() {
      markQuery(output, cs.query, cs.pinned, false);
      shadeTokens(source, (j) => crossWeight(cs.layer, cs.head, cs.query, j));
      const aligned = alignedWith(cs.query);
      [...source.children].forEach((span, j) => span.classList.toggle("aligned", aligned.includes(j)));
      const alignment = scoreOfHead(cs.layer, cs.head, "alignment");
      document.getElementById("cross-selection-label").textContent = "layer " + cs.layer + " head " + cs.head +
        (isFinite(alignment) ? " (alignment " + fmt(alignment) + ")" : "") + "; writing token " + cs.query + " " +
        JSON.stringify(c.output_tokens[cs.query]) +
        (aligned.length ? ", aligned with source token" + (aligned.length > 1 ? "s " : " ") + aligned.join(", ") : "");
      for (const row of document.querySelectorAll("#cross-heads tbody tr")) {
        row.classList.toggle("selected", Number(row.dataset.layer) === cs.layer && Number(row.dataset.head) === cs.head);
      }
      for (const fig of document.querySelectorAll("#cross-grids .heatmap")) {
        const l = Number(fig.dataset.layer), h = Number(fig.dataset.head);
        fig.classList.toggle("selected", l === cs.layer && h === cs.head);
        paintHeatmap(fig.querySelector("canvas"), CT, S, size, (i, j) => crossWeight(l, h, i, j), cs.query);
      }
    }

    const { setQuery: setCrossQuery, pin: pinCross } = queryHandlers(cs, show);

    function selectCross(layer, head) {
      cs.layer = layer;
      cs.head = head;
      layerSel.value = String(layer);
      fillHeadSelect();
      headSel.value = String(head);
      show();
      drawAlignmentFormation();
    }

    for (let l = 0; l < CL; ++l) layerSel.append(el("option", { value: l, text: "layer " + l }));
    function fillHeadSelect() {
      headSel.replaceChildren();
      for (let h = 0; h < CH; ++h) {
        const a = scoreOfHead(Number(layerSel.value), h, "alignment");
        headSel.append(el("option", { value: h, text: "head " + h + (isFinite(a) ? ": alignment " + fmt(a) : "") }));
      }
    }
    layerSel.addEventListener("change", () => selectCross(Number(layerSel.value), Math.min(cs.head, CH - 1)));
    headSel.addEventListener("change", () => selectCross(cs.layer, Number(headSel.value)));
    makeStrip(output, c.output_tokens, setCrossQuery, pinCross, () => setCrossQuery(cs.pinned));
    makeStrip(source, data.tokens);

    (function buildHeadTable() {
      const table = document.getElementById("cross-heads");
      const aligned = c.heads.some((h) => typeof h.scores.alignment === "number");
      if (!aligned) {
        table.before(el("p", { className: "note", text: "This run's data has no known alignment, " +
          "so its cross-attention heads have no alignment score (the built-in tasks have one)." }));
      }
      if (!c.heads.length) return;
      const header = el("tr", {}, [el("th", { className: "text", text: "head" })]);
      if (aligned) header.append(el("th", { text: "alignment" }));
      if (ablated) header.append(el("th", { text: "exact-match drop without it" }));
      table.append(el("thead", {}, [header]));
      const body = el("tbody");
      for (const h of c.heads) {
        const row = el("tr", { "data-layer": h.layer, "data-head": h.head }, [
          el("td", { className: "text", text: "L" + h.layer + " H" + h.head })]);
        if (aligned) {
          row.dataset.alignment = h.scores.alignment;
          row.append(scoreCell(h.scores.alignment, true));
        }
        if (ablated) {
          row.dataset.drop = h.scores.ablated_exact_match_drop;
          row.append(scoreCell(h.scores.ablated_exact_match_drop, false));
        }
        row.addEventListener("click", () => selectCross(h.layer, h.head));
        body.append(row);
      }
      table.append(body);
    })();

    buildGrids(document.getElementById("cross-grids"), {
      layers: CL, heads: CH, rows: CT, columns: S, size: size,
      caption: (l, h) => "head " + h + (isFinite(scoreOfHead(l, h, "alignment")) ? ": alignment " + fmt(scoreOfHead(l, h, "alignment")) : ""),
      select: selectCross,
      describe: (l, h, i, j) => "layer " + l + " head " + h + ": writing " + JSON.stringify(c.output_tokens[i]) +
        " (token " + i + ") \u2192 source token " + j + " " + JSON.stringify(data.tokens[j]) + ": " + fmt(crossWeight(l, h, i, j), 3),
    });

    function drawAlignmentFormation() {
      const container = document.getElementById("cross-formation");
      container.replaceChildren();
      const snaps = c.formation;
      if (!snaps.length) {
        container.append(el("p", { className: "note", text:
          "This run's log.jsonl has no alignment per evaluation, so there are no formation curves." }));
        return;
      }
      const alignmentAt = (s, l, h) => {
        const x = s.heads.find((y) => y.layer === l && y.head === h);
        return x && typeof x.scores.alignment === "number" ? x.scores.alignment : NaN;
      };
      // The selected head's line is broad and pale, under the layers' best which it may equal.
      const lines = [{ name: "L" + cs.layer + " H" + cs.head + " alignment (selected)", color: PALETTE[1], width: 6,
        opacity: 0.3, points: snaps.map((s) => [s.step, alignmentAt(s, cs.layer, cs.head)]).filter((p) => isFinite(p[1])) }];
      for (let l = 0; l < CL; ++l) {
        lines.push({ name: "best alignment, layer " + l, color: PALETTE[(2 * l) % PALETTE.length],
          points: snaps.map((s) => [s.step, Math.max(...[...Array(CH).keys()].map((h) => alignmentAt(s, l, h)).filter(isFinite))])
            .filter((p) => isFinite(p[1])) });
      }
      if (c.exact_match.length) lines.push({ name: "held-out exact match", points: c.exact_match, color: "#1d1f24", dash: "5 3", markers: true });
      lineChart(container, lines, { label: "Alignment and held-out exact match over training", yMin: 0, yMax: 1 });
    }

    selectCross(cs.layer, cs.head);
    return {
      layers: CL,
      heads: CH,
      outputTokens: c.output_tokens.slice(),
      state: () => Object.assign({}, cs),
      weight: crossWeight,
      aligned: alignedWith,
      select: selectCross,
      setQuery: setCrossQuery,
      pin: pinCross,
      shading: () => [...source.children].map((s) => (s.dataset.weight === undefined ? null : Number(s.dataset.weight))),
    };
  })();

  // ---- an encoder's [MASK] view: every head's row from a chosen masked position -------------

  const maskView = (function buildMaskView() {
    if (!masks.length) return null;
    // The section exists on an encoder's page only: the others' pages stay as they were.
    const maskSelect = el("select", { id: "mask-select" });
    const container = el("div", { id: "mask-multiples" });
    document.getElementById("explore").after(el("section", { id: "mask-section" }, [
      el("h2", { text: "[MASK] view: where a masked position looks" }),
      el("div", { className: "controls" }, [el("label", {}, ["[MASK] at ", maskSelect]),
        el("span", { id: "mask-label", text: "the model's guesses there, most probable first:" })]),
      el("p", { className: "hint", text: "Pick a masked position: every head's attention from it, layer by " +
        "layer, shaded on every token before and after it ([CLS] and [SEP] included), and the model's most " +
        "probable tokens there. Click a head's name to explore it above." }),
      el("ol", { id: "mask-top", className: "mask-top" }),
      container]));
    const view = { mask: 0 };
    masks.forEach((m, k) => maskSelect.append(el("option", { value: k, text: "token " + m.position })));
    const strips = [];
    for (let l = 0; l < L; ++l) {
      const layer = el("div", { className: "mask-layer", "data-layer": l }, [el("h3", { text: "layer " + l })]);
      for (let h = 0; h < H; ++h) {
        const info = headInfo(l, h);
        const strip = el("div", { className: "tokens", "data-layer": l, "data-head": h });
        makeStrip(strip, data.tokens);
        const title = el("h3", {}, ["L" + l + " H" + h + " ", el("span", { text: info.role + " " + fmt(roleScore(info)) })]);
        title.addEventListener("click", () => select(l, h));
        layer.append(el("div", { className: "multiple", "data-layer": l, "data-head": h }, [title, strip]));
        strips.push({ layer: l, head: h, strip: strip });
      }
      container.append(layer);
    }
    function show(k) {
      view.mask = k;
      maskSelect.value = String(k);
      const m = masks[k];
      for (const s of strips) {
        markQuery(s.strip, m.position, -1, false);
        shadeTokens(s.strip, (j) => weight(s.layer, s.head, m.position, j));
      }
      document.getElementById("mask-top").replaceChildren(...m.top.map((t) =>
        el("li", { "data-token": t.token }, [el("b", { text: tokenLabel(t.token).text }), " " + fmt(t.prob, 3)])));
    }
    maskSelect.addEventListener("change", () => show(Number(maskSelect.value)));
    show(0);
    return {
      positions: masks.map((m) => m.position),
      top: (k) => masks[k].top.slice(),
      select: show,
      state: () => Object.assign({}, view),
      // Each head's shading in the view: {layer, head, weights over the tokens}.
      rows: () => strips.map((s) => ({ layer: s.layer, head: s.head,
        weights: [...s.strip.children].map((span) => Number(span.dataset.weight)) })),
    };
  })();

  select(state.layer, state.head);

  // For tests and the console: the state and the values behind the shading.
  window.tinygptExplorer = {
    layers: L,
    heads: H,
    tokens: data.tokens.slice(),
    state: () => Object.assign({}, state),
    weight: weight,
    select: select,
    setQuery: setQuery,
    pin: pin,
    shading: () => [...tokenStrip.children].map((s) => (s.dataset.weight === undefined ? null : Number(s.dataset.weight))),
    cross: cross, // an encoder-decoder's cross-attention view, or null
    masks: maskView, // an encoder's [MASK] view, or null
  };
})();
