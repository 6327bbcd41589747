// The attention explorer in a real browser: Debian's chromium, headless, driven by puppeteer-core
// (which uses the system browser and downloads nothing).
//
//   node explorer_test.js --tinygpt build/tinygpt --work DIR [--screenshot FILE --page FILE]
//
// Trains a small model with the real binary (train writes DIR/run/report.html), writes a second
// page with `heads --text ... --html`, and checks in the browser: no console error and no request
// leaving the page (every request is intercepted; anything but file: and data: fails the test);
// the head picker lists every head with the role `heads --json` gives it; hovering a token shades
// the others with that token's attention row, whose averages are the head's previous-token,
// current-token and first-token scores of `heads --json`; the small multiples; the layer grids;
// the loss curve; and, on pages given the formats of a run that recorded them, the formation
// curves and the ablation table; an encoder-decoder's page (checkSeq2seqPage); an encoder's page
// and its [MASK] view (checkEncoderPage).
//
// With --screenshot FILE --page FILE [--layer L --head H --query I --height PX --section ID] it
// only photographs a page, for the README.
// Exit codes: 0 passed, 1 failed, 77 skipped (no browser that can run here).
"use strict";

const assert = require("assert");
const childProcess = require("child_process");
const fs = require("fs");
const path = require("path");
const url = require("url");

const SKIP = 77;
const PROBE = "the cat sees the dog. the dog sees the cat.";

function parseArgs() {
  const args = { chromium: process.env.CHROMIUM || "/usr/bin/chromium" };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, "")] = argv[i + 1];
  return args;
}

function skip(message) {
  console.log("SKIP: " + message);
  process.exit(SKIP);
}

function run(binary, args) {
  const result = childProcess.spawnSync(binary, args, { encoding: "utf8", maxBuffer: 64 << 20 });
  if (result.status !== 0) {
    throw new Error("tinygpt " + args.join(" ") + " exited with " + result.status + ":\n" + result.stderr);
  }
  return result.stdout;
}

async function launch(chromium) {
  let puppeteer;
  try {
    puppeteer = require("puppeteer-core");
  } catch (e) {
    skip("puppeteer-core is not installed (./setup.sh test installs it into build/browser): " + e.message);
  }
  if (!fs.existsSync(chromium)) skip(chromium + " is missing (apt-get install chromium)");
  const profile = fs.mkdtempSync(path.join(require("os").tmpdir(), "tinygpt-chromium-"));
  try {
    const browser = await puppeteer.launch({
      executablePath: chromium,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--user-data-dir=" + profile],
      timeout: 60000,
    });
    return { browser, profile };
  } catch (e) {
    fs.rmSync(profile, { recursive: true, force: true });
    skip("chromium cannot run here: " + e.message.split("\n")[0]);
  }
}

// Opens a page with every request intercepted; returns it with the lists of problems seen.
async function open(browser, file) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const problems = { errors: [], requests: [] };
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    const target = request.url();
    if (target.startsWith("file:") || target.startsWith("data:")) {
      request.continue();
    } else {
      problems.requests.push(target);
      request.abort();
    }
  });
  page.on("console", (message) => {
    if (message.type() === "error") problems.errors.push("console: " + message.text());
  });
  page.on("pageerror", (error) => problems.errors.push("page error: " + error.message));
  page.on("requestfailed", (request) => {
    if (request.url().startsWith("file:")) problems.errors.push("failed to load " + request.url());
  });
  await page.goto(url.pathToFileURL(file).href, { waitUntil: "load" });
  await page.waitForFunction(() => window.tinygptExplorer !== undefined, { timeout: 10000 });
  return { page, problems };
}

function checkNoProblems(problems, name) {
  assert.deepStrictEqual(problems.errors, [], name + ": console errors");
  assert.deepStrictEqual(problems.requests, [], name + ": requests leaving the page");
}

// What the page shows for the token strip: each token's data-weight and its background alpha.
function readStrip(page, selector) {
  return page.$$eval(selector + " .tok", (spans) => spans.map((s) => {
    const m = getComputedStyle(s).backgroundColor.match(/rgba?\(([^)]*)\)/);
    const parts = m ? m[1].split(",").map(Number) : [];
    return { weight: s.dataset.weight === undefined ? null : Number(s.dataset.weight),
      alpha: parts.length === 4 ? parts[3] : (parts.length === 3 ? 1 : 0) };
  }));
}

function checkStaticPage(html, name) {
  assert(!/https?:\/\//i.test(html), name + " holds an http(s) URL");
  assert(!/<link\b|\bsrc\s*=|@import|url\(/i.test(html), name + " links something external");
}

// Hovers every token of every head and checks the shading against `heads --json`.
async function checkShading(page, heads, tokens) {
  const T = tokens;
  const tolerance = 1 / 510 + 1e-4; // quantised to 1/255
  for (const h of heads) {
    await page.click('#head-picker tbody tr[data-layer="' + h.layer + '"][data-head="' + h.head + '"]');
    const rows = [];
    for (let i = 0; i < T; ++i) {
      await page.hover('#tokens .tok[data-index="' + i + '"]');
      const strip = await readStrip(page, "#tokens");
      const state = await page.evaluate(() => window.tinygptExplorer.state());
      assert.strictEqual(state.query, i, "hovering token " + i + " makes it the query");
      assert.strictEqual(state.layer, h.layer);
      assert.strictEqual(state.head, h.head);
      const row = strip.map((s) => s.weight);
      strip.forEach((s, j) => {
        assert(Math.abs(s.alpha - s.weight) < 2e-3, "head " + h.layer + "." + h.head + " token " + i +
          ": the shading of token " + j + " (alpha " + s.alpha + ") is its weight " + s.weight);
        if (j > i) assert(s.weight <= tolerance, "causal: token " + i + " pays " + s.weight + " to later token " + j);
      });
      const sum = row.reduce((a, b) => a + b, 0);
      assert(Math.abs(sum - 1) <= (i + 1) * tolerance, "row " + i + " of head " + h.layer + "." + h.head + " sums to " + sum);
      rows.push(row);
    }
    // The head's scores on this probe text, recomputed from what the page shaded.
    const mean = (f) => rows.slice(1).reduce((a, row, k) => a + f(row, k + 1), 0) / (T - 1);
    const shown = {
      previous_token: mean((row, i) => row[i - 1]),
      current_token: mean((row, i) => row[i]),
      first_token: mean((row) => row[0]),
    };
    for (const [name, value] of Object.entries(shown)) {
      assert(Math.abs(value - h[name]) <= tolerance, "head " + h.layer + "." + h.head + " " + name +
        ": the page shades " + value.toFixed(4) + ", heads --json says " + h[name].toFixed(4));
    }
    // Another token's row is what the strip shows after hovering it: the shading changes.
    const differs = rows.some((row) => row.some((w, j) => Math.abs(w - rows[T - 1][j]) > 0.01));
    assert(differs, "head " + h.layer + "." + h.head + ": hovering different tokens changes the shading");
  }
}

async function checkPage(browser, file, expect) {
  const html = fs.readFileSync(file, "utf8");
  const name = path.basename(file);
  checkStaticPage(html, name);
  const { page, problems } = await open(browser, file);
  const explorer = await page.evaluate(() => ({ layers: window.tinygptExplorer.layers,
    heads: window.tinygptExplorer.heads, tokens: window.tinygptExplorer.tokens }));
  assert.strictEqual(explorer.layers * explorer.heads, expect.heads.length, name + ": heads in the page");

  const picker = await page.$$eval("#head-picker tbody tr", (rows) => rows.map((r) => ({
    layer: Number(r.dataset.layer), head: Number(r.dataset.head), role: r.dataset.role })));
  assert.deepStrictEqual(picker, expect.heads.map((h) => ({ layer: h.layer, head: h.head, role: h.role })),
    name + ": the head picker lists every head with its role");
  const roleTable = await page.$$eval("#role-table tbody tr", (rows) => rows.map((r) => r.dataset.role));
  assert.deepStrictEqual(roleTable.sort(), [...new Set(expect.heads.map((h) => h.role))].sort(), name + ": role table");
  const grids = await page.$$eval("#grids canvas", (c) => c.length);
  assert.strictEqual(grids, expect.heads.length, name + ": one heatmap per head in the layer grids");

  if (expect.tokens) assert.deepStrictEqual(explorer.tokens, expect.tokens, name + ": the probe text as tokens");
  if (expect.shading) await checkShading(page, expect.heads, explorer.tokens.length);

  // Small multiples: every head of the layer, each strip shaded with its own row.
  await page.select("#head-select", "all");
  await page.hover('#tokens .tok[data-index="' + (explorer.tokens.length - 1) + '"]');
  const multiples = await page.$$eval("#multiples .multiple", (m) => m.length);
  assert.strictEqual(multiples, explorer.heads, name + ": small multiples show every head of the layer");
  const layer = (await page.evaluate(() => window.tinygptExplorer.state())).layer;
  for (let h = 0; h < explorer.heads; ++h) {
    const strip = await readStrip(page, '#multiples .multiple[data-head="' + h + '"]');
    const expected = await page.evaluate((l, hh, q, n) => [...Array(n).keys()].map((j) =>
      window.tinygptExplorer.weight(l, hh, q, j)), layer, h, explorer.tokens.length - 1, explorer.tokens.length);
    strip.forEach((s, j) => assert(Math.abs(s.weight - expected[j]) < 1e-5, name + ": small multiple " + h));
  }

  const series = await page.$$eval("svg path[data-series]", (p) => p.map((x) => x.dataset.series));
  assert(series.includes("training loss per step"), name + ": loss curve");
  const formation = series.filter((s) => s.startsWith("best previous-token"));
  assert.strictEqual(formation.length, expect.formation ? explorer.layers : 0, name + ": formation curves");
  if (expect.formation) {
    // The selected head's two scores are told apart by colour, in the chart and in its legend.
    const own = await page.$$eval(".chart", (charts) => {
      const chart = charts.find((c) => c.querySelector(".chart-title").textContent.startsWith("The selected head"));
      return {
        lines: [...chart.querySelectorAll("path[data-series]")].map((p) => [p.dataset.series, p.getAttribute("stroke")]),
        legend: [...chart.querySelectorAll(".legend line")].map((l) => l.getAttribute("stroke")),
      };
    });
    const colours = (score) => new Set(own.lines.filter(([n]) => n.endsWith(score)).map(([, c]) => c));
    const previous = colours("previous-token"), induction = colours("induction");
    assert(previous.size === 1 && induction.size === 1 && [...previous][0] !== [...induction][0],
      name + ": the selected head's curves share a colour: " + JSON.stringify(own.lines));
    assert(own.legend.length === 2 && own.legend[0] !== own.legend[1], name + ": legend " + JSON.stringify(own.legend));
  }
  const ablationRows = await page.$$eval("#ablation-table tbody tr", (rows) => rows.map((r) => ({
    layer: Number(r.dataset.layer), head: Number(r.dataset.head), ratio: Number(r.dataset.ratio),
    lossDelta: Number(r.dataset.lossDelta) })));
  assert.strictEqual(ablationRows.length, expect.ablation ? expect.heads.length : 0, name + ": ablation table");
  if (expect.ablation && "ablated_second_copy_ratio" in expect.heads[0]) {
    // Each row against what `heads --ablate --json` reports for that head (the page keeps 4
    // decimals of a score).
    for (const row of ablationRows) {
      const h = expect.heads.find((x) => x.layer === row.layer && x.head === row.head);
      assert(Math.abs(row.ratio - h.ablated_second_copy_ratio) <= 5.01e-5 &&
        Math.abs(row.lossDelta - h.ablated_loss_delta) <= 5.01e-5, name + ": ablation of head " + row.layer +
        "." + row.head + " shows " + JSON.stringify(row) + ", heads --ablate --json says " +
        JSON.stringify([h.ablated_second_copy_ratio, h.ablated_loss_delta]));
    }
  }

  checkNoProblems(problems, name);
  await page.close();
  console.log("ok: " + name + " (" + (html.length / 1024).toFixed(0) + " KiB)");
}

// An encoder-decoder's page (builtin:reverse): the encoder's self-attention on the source in the
// main view, not causal; the cross-attention view with each head's alignment and ablation as
// `heads --json` reports them (when `report` is that report for the same pairs), the output
// strip the source reversed, hovering an output token shading the source with its row and
// underlining the position the task aligns it with; the alignment formation chart.
async function checkSeq2seqPage(browser, file, report) {
  const name = path.basename(file);
  checkStaticPage(fs.readFileSync(file, "utf8"), name);
  const { page, problems } = await open(browser, file);
  const view = await page.evaluate(() => ({ tokens: window.tinygptExplorer.tokens,
    layers: window.tinygptExplorer.layers, heads: window.tinygptExplorer.heads,
    cross: window.tinygptExplorer.cross && { layers: window.tinygptExplorer.cross.layers,
      heads: window.tinygptExplorer.cross.heads, outputs: window.tinygptExplorer.cross.outputTokens } }));
  assert(view.cross, name + ": no cross-attention view");
  const source = view.tokens, S = source.length;
  assert.deepStrictEqual(view.cross.outputs, [...source].reverse().concat(["</s>"]), name + ": the output strip");
  const hidden = await page.$$eval("section", (all) => all.filter((x) => x.hidden).map((x) => x.id));
  assert.deepStrictEqual(hidden.sort(), ["ablation-section", "composition-section", "formation-section"], name + ": GPT-only sections hidden");

  // The encoder's view: every source token sees every other.
  const picker = await page.$$eval("#head-picker tbody tr", (rows) => rows.map((r) => [Number(r.dataset.layer),
    Number(r.dataset.head), r.dataset.role]));
  assert.strictEqual(picker.length, view.layers * view.heads, name + ": encoder heads in the picker");
  if (report) assert.deepStrictEqual(picker, report.encoder.map((h) => [h.layer, h.head, h.role]), name + ": encoder roles");
  const tolerance = 1 / 510 + 1e-4;
  await page.hover('#tokens .tok[data-index="0"]');
  assert.strictEqual(await page.$$eval("#tokens .tok.future", (x) => x.length), 0, name + ": an encoder greys no token");
  const first = await readStrip(page, "#tokens");
  const firstSum = first.reduce((a, x) => a + x.weight, 0);
  assert(Math.abs(firstSum - 1) <= S * tolerance && first.slice(1).some((x) => x.weight > 0),
    name + ": source token 0's row sums to " + firstSum + " over the tokens after it too");

  // Cross-attention heads, as heads --json reports them.
  const rows = await page.$$eval("#cross-heads tbody tr", (r) => r.map((x) => ({ layer: Number(x.dataset.layer),
    head: Number(x.dataset.head), alignment: Number(x.dataset.alignment), drop: Number(x.dataset.drop) })));
  assert.strictEqual(rows.length, view.cross.layers * view.cross.heads, name + ": a row per cross-attention head");
  if (report) {
    rows.forEach((row, i) => {
      const h = report.cross_attention[i];
      assert(row.layer === h.layer && row.head === h.head && Math.abs(row.alignment - h.alignment) <= 5.01e-5 &&
        Math.abs(row.drop - h.ablated_exact_match_drop) <= 5.01e-5, name + ": cross head row " + JSON.stringify(row) +
        ", heads --json says " + JSON.stringify(h));
    });
  }
  for (const row of rows) {
    await page.click('#cross-heads tbody tr[data-layer="' + row.layer + '"][data-head="' + row.head + '"]');
    const state = await page.evaluate(() => window.tinygptExplorer.cross.state());
    assert(state.layer === row.layer && state.head === row.head, name + ": clicking a cross head selects it");
    let differs = false, previous = null;
    for (let i = 0; i < view.cross.outputs.length; ++i) {
      await page.hover('#cross-output .tok[data-index="' + i + '"]');
      const strip = await readStrip(page, "#cross-source");
      const expected = await page.evaluate((l, h, q, n) => [...Array(n).keys()].map((j) =>
        window.tinygptExplorer.cross.weight(l, h, q, j)), row.layer, row.head, i, S);
      strip.forEach((x, j) => {
        assert(Math.abs(x.weight - expected[j]) < 1e-5 && Math.abs(x.alpha - x.weight) < 2e-3,
          name + ": output " + i + " shades source " + j + " with " + x.weight + " (alpha " + x.alpha + "), its weight is " + expected[j]);
      });
      const sum = strip.reduce((a, x) => a + x.weight, 0);
      assert(Math.abs(sum - 1) <= S * tolerance, name + ": cross row " + i + " sums to " + sum);
      const underlined = await page.$$eval("#cross-source .tok.aligned", (x) => x.map((y) => Number(y.dataset.index)));
      assert.deepStrictEqual(underlined, i < S ? [S - 1 - i] : [], name + ": output " + i + " is aligned with");
      if (previous && strip.some((x, j) => Math.abs(x.weight - previous[j].weight) > 0.01)) differs = true;
      previous = strip;
    }
    assert(differs, name + ": hovering different output tokens changes the shading");
  }
  const series = await page.$$eval("#cross-formation path[data-series]", (p) => p.map((x) => x.dataset.series));
  for (let l = 0; l < view.cross.layers; ++l) {
    assert(series.includes("best alignment, layer " + l), name + ": alignment formation of layer " + l + " in " + series);
  }
  assert(series.includes("held-out exact match"), name + ": exact match over training");
  assert.strictEqual(await page.$$eval("#cross-grids canvas", (c) => c.length), rows.length, name + ": a heatmap per cross head");
  checkNoProblems(problems, name);
  await page.close();
  console.log("ok: " + name);
}

// An encoder's page: its special tokens shown as tokens, its heads' roles as `heads --json`
// gives them, no greyed token, and the [MASK] view: choosing each mask position shows every
// head's row from it (as `heads --mask-view --json` gives it, when `report` has it), each
// summing to 1 over the tokens (the page has no padding), and the model's guesses there.
async function checkEncoderPage(browser, file, report) {
  const name = path.basename(file);
  checkStaticPage(fs.readFileSync(file, "utf8"), name);
  const { page, problems } = await open(browser, file);
  const view = await page.evaluate(() => ({ tokens: window.tinygptExplorer.tokens, layers: window.tinygptExplorer.layers,
    heads: window.tinygptExplorer.heads, masks: window.tinygptExplorer.masks && window.tinygptExplorer.masks.positions }));
  const T = view.tokens.length;
  assert.strictEqual(view.tokens[0], "[CLS]", name + ": the text starts with [CLS]");
  assert.strictEqual(view.tokens[T - 1], "[SEP]", name + ": the text ends with [SEP]");
  assert(view.masks && view.masks.length > 0, name + ": no [MASK] view");
  assert.deepStrictEqual(view.masks, view.tokens.map((t, i) => (t === "[MASK]" ? i : -1)).filter((i) => i >= 0),
    name + ": the view's positions are the [MASK] tokens");
  const shown = await page.$$eval("#tokens .tok", (spans) => spans.map((s) => [s.textContent, s.classList.contains("special")]));
  for (const i of [0, T - 1, ...view.masks]) {
    assert.deepStrictEqual(shown[i], [view.tokens[i], true], name + ": token " + i + " is shown as a special token");
  }
  const picker = await page.$$eval("#head-picker tbody tr", (rows) => rows.map((r) => [Number(r.dataset.layer),
    Number(r.dataset.head), r.dataset.role]));
  assert.deepStrictEqual(picker, report.heads.map((h) => [h.layer, h.head, h.role]), name + ": the heads' roles");
  await page.hover('#tokens .tok[data-index="1"]');
  assert.strictEqual(await page.$$eval(".tok.future", (x) => x.length), 0, name + ": an encoder greys no token");
  const hidden = await page.$$eval("section", (all) => all.filter((x) => x.hidden).map((x) => x.id));
  assert.deepStrictEqual(hidden.sort(), ["ablation-section", "composition-section", "cross-section"],
    name + ": the GPT's and the encoder-decoder's sections hidden");

  const tolerance = 1 / 510 + 1e-4;
  const expected = report.mask_view ? report.mask_view.masks : null;
  if (expected) assert.deepStrictEqual(view.masks, expected.map((m) => m.query), name + ": the masks of heads --mask-view");
  for (let k = 0; k < view.masks.length; ++k) {
    await page.select("#mask-select", String(k));
    const rows = await page.evaluate(() => window.tinygptExplorer.masks.rows());
    assert.strictEqual(rows.length, view.layers * view.heads, name + ": a row per head");
    rows.forEach((row, i) => {
      assert(row.layer === Math.floor(i / view.heads) && row.head === i % view.heads, name + ": rows layer by layer");
      const sum = row.weights.reduce((a, w) => a + w, 0);
      assert(Math.abs(sum - 1) <= T * tolerance, name + ": mask " + k + ", head " + row.layer + "." + row.head +
        ": its row sums to " + sum);
      if (!expected) return;
      row.weights.forEach((w, j) => assert(Math.abs(w - expected[k].heads[i].row[j]) <= tolerance,
        name + ": mask " + k + ", head " + i + ", key " + j + ": " + w + ", heads --json says " + expected[k].heads[i].row[j]));
    });
    const marked = await page.$$eval("#mask-multiples .tokens", (strips) => strips.map((s) =>
      [...s.children].findIndex((t) => t.classList.contains("query"))));
    assert(marked.every((i) => i === view.masks[k]), name + ": every strip frames the chosen [MASK]");
    const guesses = await page.$$eval("#mask-top li", (items) => items.map((li) => li.dataset.token));
    assert.strictEqual(guesses.length, 5, name + ": the model's five guesses");
    if (expected) assert.deepStrictEqual(guesses, expected[k].top.map((t) => t.token), name + ": the guesses of heads --json");
  }
  checkNoProblems(problems, name);
  await page.close();
  console.log("ok: " + name);
}

// A copy of the run whose log.jsonl carries head scores at every evaluation, as training writes
// them once it records head formation: {heads: [{layer, head, role, previous_token, ...}],
// in_context: {first_copy_loss, second_copy_loss, ratio}}.
function runWithFormation(run, dir, heads) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync(run, dir, { recursive: true });
  const logPath = path.join(dir, "log.jsonl");
  const lines = fs.readFileSync(logPath, "utf8").split("\n").filter((l) => l).map((l) => {
    const record = JSON.parse(l);
    if ("train_loss" in record) {
      record.heads = heads.map((h) => Object.assign({}, h, { previous_token: h.previous_token * record.step / 300 }));
      record.in_context = { first_copy_loss: 3, second_copy_loss: 2, ratio: 2 / 3 };
    }
    return JSON.stringify(record);
  });
  fs.writeFileSync(logPath, lines.join("\n") + "\n");
}

// A photograph of `file` for the README: head --layer/--head (default: the page's choice) with
// the attention of token --query (default: the last), the top --height pixels. With --section
// cross-section (an encoder-decoder's page), the cross-attention view alone, its head
// --layer/--head (default: the best aligned) with output token --query (default: 0) pinned.
async function screenshot(browser, file, out, args) {
  const { page, problems } = await open(browser, file);
  if (args.section === "cross-section") {
    await page.setViewport({ width: 1240, height: 2000, deviceScaleFactor: 1 });
    if (args.layer !== undefined) {
      await page.evaluate((l, h) => window.tinygptExplorer.cross.select(l, h), Number(args.layer), Number(args.head));
    }
    await page.click('#cross-output .tok[data-index="' + Number(args.query || 0) + '"]');
    await page.mouse.move(1200, 5);
    await (await page.$("#cross-section")).screenshot({ path: out });
    checkNoProblems(problems, path.basename(file));
    console.log("screenshot: " + out);
    return;
  }
  const height = Number(args.height || 1400);
  await page.setViewport({ width: 1240, height: height, deviceScaleFactor: 1 });
  if (args.layer !== undefined) {
    await page.evaluate((l, h) => window.tinygptExplorer.select(l, h), Number(args.layer),
      args.head === "all" ? "all" : Number(args.head));
  }
  const last = await page.evaluate(() => window.tinygptExplorer.tokens.length - 1);
  const query = args.query !== undefined ? Number(args.query) : last;
  await page.click('#tokens .tok[data-index="' + query + '"]');
  await page.mouse.move(1200, 5);
  await page.screenshot({ path: out, clip: { x: 0, y: 0, width: 1240, height: height } });
  checkNoProblems(problems, path.basename(file));
  console.log("screenshot: " + out);
}

// The composition section: one arrow per top K-composition pair (as many as a layer has heads),
// the pairs `heads --json` scores highest, from the writer's dot to the reader's; clicking a dot
// explores that head.
async function checkComposition(browser, file, pairs) {
  const { page, problems } = await open(browser, file);
  try {
    const arrows = await page.$$eval("#composition-arrows line.composition-arrow", (lines) =>
      lines.map((l) => ({ from: l.dataset.from, to: l.dataset.to, score: Number(l.dataset.score),
        x1: Number(l.getAttribute("x1")), x2: Number(l.getAttribute("x2")) })));
    const heads = await page.$$eval("#composition-arrows circle.composition-head", (dots) => dots.length);
    const layers = 1 + Math.max(...pairs.map((p) => p.to[0]));
    const perLayer = heads / layers;
    const top = [...pairs].sort((a, b) => b.k - a.k).slice(0, perLayer);
    assert.strictEqual(arrows.length, top.length, "one arrow per top pair");
    arrows.forEach((a, i) => {
      assert.strictEqual(a.from, top[i].from.join("."), "arrow " + i + " starts at the writer");
      assert.strictEqual(a.to, top[i].to.join("."), "arrow " + i + " ends at the reader");
      assert.ok(Math.abs(a.score - top[i].k) < 1e-9, "arrow " + i + " carries the K-composition score");
      assert.ok(a.x1 < a.x2, "arrow " + i + " points to the later layer");
    });
    await page.click('#composition-arrows circle[data-layer="1"][data-head="1"]');
    const selected = await page.$eval("#layer-select", (s) => s.value) + "." + await page.$eval("#head-select", (s) => s.value);
    assert.strictEqual(selected, "1.1", "clicking a head's dot explores it");
    checkNoProblems(problems, "composition page");
  } finally {
    await page.close();
  }
}

async function main() {
  const args = parseArgs();
  const { browser, profile } = await launch(args.chromium);
  try {
    if (args.screenshot) {
      await screenshot(browser, args.page, args.screenshot, args);
      return;
    }
    const work = args.work;
    fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(work, { recursive: true });
    const runDir = path.join(work, "run");
    run(args.tinygpt, ["train", "--out", runDir, "--steps", "300", "--layers", "2", "--heads", "2",
      "--d-model", "32", "--block", "48", "--batch", "8", "--eval-every", "100", "--eval-iters", "2",
      "--lr", "1e-2", "--threads", "1"]);
    const heads = JSON.parse(run(args.tinygpt, ["heads", "--model", runDir, "--json", "--threads", "1"])).heads;
    // A run logs the heads at every evaluation, so its pages carry the formation curves; its
    // report also removes each head in turn (the ablation table).
    await checkPage(browser, path.join(runDir, "report.html"), { heads: heads, formation: true, ablation: true });

    const probe = path.join(work, "probe.html");
    const probeHeads = JSON.parse(run(args.tinygpt, ["heads", "--model", runDir, "--text", PROBE, "--json",
      "--html", probe, "--out", path.join(work, "probe-heads"), "--threads", "1"])).heads;
    await checkPage(browser, probe, { heads: probeHeads, tokens: [...PROBE], shading: true, formation: true });

    const history = path.join(work, "run-with-formation");
    runWithFormation(runDir, history, heads);
    const formationPage = path.join(work, "formation.html");
    run(args.tinygpt, ["heads", "--model", history, "--html", formationPage, "--json", "--threads", "1"]);
    await checkPage(browser, formationPage, { heads: heads, formation: true });
    const ablationPage = path.join(work, "ablation.html");
    const ablated = JSON.parse(run(args.tinygpt, ["heads", "--model", history, "--ablate", "--html", ablationPage,
      "--json", "--threads", "1"])).heads;
    await checkPage(browser, ablationPage, { heads: ablated, formation: true, ablation: true });

    const compositionPage = path.join(work, "composition.html");
    const composed = JSON.parse(run(args.tinygpt, ["heads", "--model", runDir, "--composition", "--html",
      compositionPage, "--json", "--threads", "1"]));
    await checkComposition(browser, compositionPage, composed.composition);

    const seq2seqRun = path.join(work, "seq2seq");
    run(args.tinygpt, ["train", "--arch", "encoder-decoder", "--out", seq2seqRun, "--layers", "1", "--heads", "2",
      "--d-model", "32", "--block", "20", "--steps", "60", "--eval-every", "30", "--batch", "16", "--eval-iters", "1",
      "--threads", "1"]);
    await checkSeq2seqPage(browser, path.join(seq2seqRun, "report.html"), null);
    const seq2seqPage = path.join(work, "seq2seq.html");
    const seq2seqReport = JSON.parse(run(args.tinygpt, ["heads", "--model", seq2seqRun, "--json", "--ablate",
      "--pairs", "50", "--html", seq2seqPage, "--threads", "1"]));
    await checkSeq2seqPage(browser, seq2seqPage, seq2seqReport);

    const encoderRun = path.join(work, "encoder");
    run(args.tinygpt, ["train", "--arch", "encoder", "--out", encoderRun, "--layers", "2", "--heads", "2",
      "--d-model", "32", "--block", "32", "--steps", "40", "--eval-every", "20", "--batch", "8", "--eval-iters", "1",
      "--threads", "1"]);
    const encoderPage = path.join(work, "encoder.html");
    const encoderReport = JSON.parse(run(args.tinygpt, ["heads", "--model", encoderRun, "--json", "--text",
      "the c[MASK]t sat on the m[MASK]t.", "--html", encoderPage, "--mask-view", path.join(work, "mask-view"),
      "--threads", "1"]));
    await checkEncoderPage(browser, encoderPage, encoderReport);
    const encoderDefault = path.join(work, "encoder-default.html");
    const encoderHeads = JSON.parse(run(args.tinygpt, ["heads", "--model", encoderRun, "--json", "--html",
      encoderDefault, "--threads", "1"]));
    await checkEncoderPage(browser, encoderDefault, encoderHeads);
    console.log("passed");
  } finally {
    await browser.close();
    // The browser may still be flushing its profile as it exits.
    fs.rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
}

main().catch((e) => {
  console.error("FAILED: " + (e && e.stack ? e.stack : e));
  process.exit(1);
});
