// The Knowledge Bank graph explorer. Positions come from the server (fixed: fx/fy/fz), so the
// browser never simulates the bank; 3D draws with 3d-force-graph (WebGL), 2D with force-graph
// (canvas). Exposes window.kbExplorer for tests and scripts.
import ForceGraph3D from "3d-force-graph";
import ForceGraph from "force-graph";
import { LabelLayer, shortText } from "./labels.js";
import { overviewPayload, viewUrl, describeView } from "./views.js";
import { answerHtml, answerIds, entryHtml, esc } from "./panel.js";
import { buildFilterBoxes, setupSearch, tally } from "./sidebar.js";

const PALETTE = [
  "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
  "#9c755f", "#17becf", "#bcbd22", "#8c6bb1", "#d37295", "#a0cbe8", "#ffbe7d", "#8cd17d",
  "#86bcb6", "#f1ce63", "#d4a6c8", "#fabfd2",
];
const LONE = "#8a94a6";
const DIM = "rgba(150,160,180,0.35)";
const BACKFILL = new Set(["citation_backfill", "metadata_backfill", "header_parse"]);
const LARGE = 5000; // above this many nodes the page starts in 2D

const cfg = JSON.parse(document.getElementById("kbx-config").textContent);
const csrf = document.getElementById("kbx-csrf").value;
const $ = (id) => document.getElementById(id);

const state = {
  data: { nodes: [], links: [], truncated: false, layout: {} },
  byId: new Map(),
  titles: new Map(), // every entry title seen (answers, drill-downs): the panel never shows bare ids
  drawnById: new Map(),
  view: { level: "entries" }, // entries (whole bank), communities, community, around
  overview: null,
  labels: null,
  visibleNodes: [],
  visibleLinks: [],
  highlighted: new Set(),
  litLinks: new Set(),
  mode: null,
  graph: null,
  answer: null,
  selected: null,
  filters: { kinds: new Set(), relations: new Set(), sources: new Set(), hideBackfill: true },
  webgl: hasWebGL(),
};

function hasWebGL() {
  try {
    const canvas = document.createElement("canvas");
    return Boolean(canvas.getContext("webgl2") || canvas.getContext("webgl"));
  } catch (e) {
    return false;
  }
}

function colourOf(node) {
  return node.community === null || node.community === undefined
    ? LONE
    : PALETTE[node.community % PALETTE.length];
}

function sizeOf(node) {
  if (node.size !== undefined) { // a community of the overview: its ball, half filled
    const ball = 10.5 * node.size ** (state.mode === "3d" ? 1 / 3 : 1 / 2);
    return state.mode === "3d" ? Math.max(2, (0.5 * ball / 1.7) ** 3) : Math.max(2, (0.5 * ball / 2.2) ** 2);
  }
  const base = 1 + Math.min(node.degree || 0, 60) * 0.6; // a hub of 20,000 edges is not a planet
  if (node.id === state.selected) return Math.max(base, 6) * 2.5;
  if (state.highlighted.size && !state.highlighted.has(node.id)) return 0.04;
  if (state.highlighted.size) return base * 1.8 + 2;
  return base;
}

function isOverview() {
  return state.view.level === "communities";
}

function linkEnds(link) {
  const s = typeof link.source === "object" ? link.source.id : link.source;
  const t = typeof link.target === "object" ? link.target.id : link.target;
  return [s, t];
}

// --- data and filters ---------------------------------------------------------------------

function applyFilters() {
  if (isOverview()) {
    state.visibleNodes = state.data.nodes;
    state.visibleLinks = state.data.links;
    return;
  }
  const f = state.filters;
  const nodes = state.data.nodes.filter((n) => f.kinds.has(n.kind));
  const keep = new Set(nodes.map((n) => n.id));
  const links = state.data.links.filter(
    (l) => keep.has(l.from) && keep.has(l.to) && f.relations.has(l.relation)
      && f.sources.has(l.source) && !(f.hideBackfill && BACKFILL.has(l.source) && !l.has_note),
  );
  state.visibleNodes = nodes;
  state.visibleLinks = links;
}

function graphPayload() {
  const three = state.mode === "3d";
  const nodes = state.visibleNodes.map((n) => {
    const x = three ? n.x : n.x2;
    const y = three ? n.y : n.y2;
    const out = { ...n, x, y, fx: x, fy: y };
    if (three) { out.z = n.z; out.fz = n.z; }
    return out;
  });
  const links = state.visibleLinks.map((l) => ({ ...l, source: l.from, target: l.to }));
  state.drawnById = new Map(nodes.map((n) => [n.id, n]));
  return { nodes, links };
}

function countsText() {
  const d = state.data;
  if (isOverview()) {
    const o = state.overview;
    return `${o.entries.toLocaleString()} entries · ${o.total_communities} communities`;
  }
  const clusters = d.layout && d.layout.clusters ? ` · ${d.layout.clusters} clusters` : "";
  const cut = d.truncated ? " (truncated)" : "";
  const whole = d.view ? d.view.total : d.truncated && cfg.entryCount ? cfg.entryCount : d.nodes.length;
  return `${state.visibleNodes.length} of ${whole.toLocaleString("en")} entries${cut} · `
    + `${state.visibleLinks.length} edges${clusters}`;
}



// --- drawing --------------------------------------------------------------------------------

function styleGraph(graph) {
  graph
    .nodeId("id")
    .nodeLabel((n) => (n.size !== undefined
      ? `<div class="kbx-tip"><b>${esc(n.title)}</b><br>${n.size.toLocaleString()} entries · click to open</div>`
      : `<div class="kbx-tip"><b>${esc(n.title)}</b><br>${esc(n.kind)} · `
      + `${esc(n.status)} · degree ${n.degree}</div>`))
    .nodeVal(sizeOf)
    .nodeColor((n) => {
      if (n.id === state.selected) return "#ffffff";
      if (!state.highlighted.size) return colourOf(n);
      return state.highlighted.has(n.id) ? colourOf(n) : DIM;
    })
    .linkColor((l) => {
      if (state.litLinks.has(l.id)) return "#ffd166";
      if (state.highlighted.size) return "rgba(140,150,170,0.06)";
      if (l.weight !== undefined) return "rgba(200,210,230,0.35)";
      const crowd = state.visibleLinks.length > 3000 ? 0.4 : 1; // a big bank is not a hairball
      return l.has_note ? `rgba(200,210,230,${0.55 * crowd})` : `rgba(150,160,180,${0.3 * crowd})`;
    })
    .linkWidth((l) => {
      if (state.litLinks.has(l.id)) return 2.5;
      if (l.weight !== undefined) return Math.min(6, 0.5 + Math.log10(l.weight + 1));
      return state.mode === "2d" ? 0.6 : 0;
    })
    .linkDirectionalParticles((l) => (state.litLinks.has(l.id) ? 4 : 0))
    .linkDirectionalParticleWidth(3)
    .linkDirectionalParticleSpeed(0.006)
    .linkDirectionalParticleColor(() => "#ffe8a3")
    .onNodeClick((n) => (n.size !== undefined ? openCommunity(n.cid) : selectNode(n.id, true)))
    .warmupTicks(0)
    .cooldownTicks(3);
  // Positions are fixed by the server: no forces, the few ticks only place links and nodes.
  // (The link force stays, with no strength: it is what resolves link ends to node objects.)
  graph.d3Force("charge", null).d3Force("center", null);
  graph.d3Force("link").strength(0);
  return graph;
}

function createGraph(mode) {
  const el = $("kbx-graph");
  if (state.graph && state.graph._destructor) state.graph._destructor();
  el.innerHTML = "";
  const stage = $("kbx-stage");
  const width = stage.clientWidth;
  const height = stage.clientHeight;
  let graph;
  if (mode === "3d") {
    graph = ForceGraph3D({ controlType: "orbit" })(el)
      .backgroundColor("#0d1320")
      .nodeResolution(state.visibleNodes.length > 3000 ? 4 : 10)
      .nodeRelSize(1.7)
      .nodeOpacity(0.92)
      .linkOpacity(0.6)
      .showNavInfo(false);
  } else {
    graph = ForceGraph()(el)
      .backgroundColor("#0d1320")
      .nodeRelSize(2.2);
  }
  graph.width(width).height(height);
  styleGraph(graph);
  state.graph = graph;
  state.mode = mode;
  document.querySelectorAll(".kbx-modes button").forEach((b) => {
    b.classList.toggle("active", b.dataset.mode === mode);
    b.disabled = b.dataset.mode === "3d" && !state.webgl;
  });
  document.body.dataset.mode = mode;
  graph.graphData(graphPayload());
  updateLabels();
  fitAll(0);
}

function fitAll(ms) {
  // The answer is lit inside the whole picture, so the view always frames the whole view.
  const graph = state.graph;
  if (!graph) return;
  const bar = $("kbx-stagebar");
  const pad = 30 + (bar && !bar.hidden ? bar.offsetHeight : 0); // nothing hides under the bar
  setTimeout(() => graph.zoomToFit(ms, pad), 30);
}

function refreshStyles() {
  updateLabels();
  const g = state.graph;
  if (!g) return;
  // Re-setting the accessors makes both libraries restyle (and the 2D canvas redraw).
  g.nodeVal(g.nodeVal()).nodeColor(g.nodeColor()).linkColor(g.linkColor())
    .linkWidth(g.linkWidth()).linkDirectionalParticles(g.linkDirectionalParticles());
}

function redraw() {
  applyFilters();
  relight();
  if (state.graph) state.graph.graphData(graphPayload());
  updateLabels();
  $("kbx-counts").textContent = countsText();
}

function setMode(mode) {
  if (mode === "3d" && !state.webgl) mode = "2d";
  createGraph(mode);
}

// --- flying, selecting, searching --------------------------------------------------------

function drawnNode(id) {
  return state.drawnById.get(id) || null;
}

function titleOf(id) {
  return state.titles.get(id) || (state.byId.get(id) || {}).title || null;
}

function remember(nodes) {
  for (const n of nodes) if (n.title && n.size === undefined) state.titles.set(n.id, n.title);
}

// Which drawn nodes carry a label: the selected entry first, then the answer in its order; in
// the overview every community (largest first).
function updateLabels() {
  if (!state.labels) return;
  const stage = $("kbx-stage");
  const bar = $("kbx-stagebar");
  state.labels.top = bar && !bar.hidden ? bar.offsetHeight : 0;
  const items = [];
  if (isOverview()) {
    const nodes = [...state.visibleNodes].sort((a, b) => b.size - a.size).slice(0, 60);
    for (const n of nodes) {
      items.push({ id: n.id, text: `${shortText(n.title, 40)} · ${n.size.toLocaleString()}`,
        title: n.title, kind: "community" });
    }
  } else {
    if (state.selected && state.drawnById.has(state.selected)) {
      const n = state.drawnById.get(state.selected);
      items.push({ id: n.id, text: shortText(n.title), title: n.title, kind: "selected" });
    }
    const order = state.answer ? answerIds(state.answer) : [];
    const seen = new Set(items.map((i) => i.id));
    for (const id of order) {
      if (seen.has(id) || !state.drawnById.has(id) || items.length >= 40) continue;
      seen.add(id);
      const n = state.drawnById.get(id);
      items.push({ id, text: shortText(n.title), title: n.title, kind: "lit" });
    }
  }
  state.labels.set(items, state.drawnById);
  stage.dataset.labels = String(items.length);
}

function flyTo(id) {
  const node = drawnNode(id);
  if (!node || !state.graph) return;
  if (state.mode === "3d") {
    const dist = 90;
    const len = Math.hypot(node.x, node.y, node.z) || 1;
    const ratio = 1 + dist / len;
    state.graph.cameraPosition(
      { x: node.x * ratio, y: node.y * ratio, z: node.z * ratio }, node, 900);
  } else {
    state.graph.centerAt(node.x, node.y, 700);
    state.graph.zoom(5, 700);
  }
}

async function selectNode(id, fly) {
  if (cfg.large && !state.drawnById.has(id)) {
    // Not in this view of a large bank: open the entry's neighbourhood instead.
    await openView({ level: "around", ids: [id] });
  }
  state.selected = id;
  refreshStyles();
  if (fly) flyTo(id);
  const body = $("kbx-panel-body");
  body.innerHTML = `<p class="kbx-hint">Loading ${esc(titleOf(id) || id)}…</p>`;
  try {
    const resp = await fetch(cfg.entryUrl.replace("__ID__", encodeURIComponent(id)), {
      headers: { Accept: "application/json" }, credentials: "same-origin",
    });
    if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
    renderEntry(await resp.json());
  } catch (err) {
    body.innerHTML = `<p class="kbx-error">Could not read entry ${esc(id)}: ${esc(err.message)}</p>`;
  }
}

// The bank's own search, for entries that are not drawn (a large bank draws one view).
async function findRemote(q) {
  const resp = await fetch(`${cfg.findUrl}?q=${encodeURIComponent(q)}`, {
    headers: { Accept: "application/json" }, credentials: "same-origin",
  });
  if (!resp.ok) return [];
  const found = (await resp.json()).results || [];
  for (const n of found) state.titles.set(n.id, n.title);
  return found.filter((n) => !state.drawnById.has(n.id));
}

function renderEntry(entry) {
  state.titles.set(entry.id, entry.title);
  for (const e of entry.edges || []) state.titles.set(e.entry.id, e.entry.title);
  $("kbx-panel-body").innerHTML = entryHtml(entry, cfg.adminUrl);
}

function renderAnswer(answer) {
  $("kbx-panel-body").innerHTML = answerHtml(answer, titleOf);
}


// --- the fold answer, lit ------------------------------------------------------------------

function relight() {
  state.litLinks = new Set();
  if (!state.highlighted.size) return;
  for (const l of state.visibleLinks) {
    if (state.highlighted.has(l.from) && state.highlighted.has(l.to)) state.litLinks.add(l.id);
  }
}

async function runQuery(text, options = {}) {
  const query = String(text || "").trim();
  if (!query) { clearQuery(); return state.highlighted; }
  $("kbx-query").value = query;
  $("kbx-panel-body").innerHTML = `<p class="kbx-hint">Asking the bank…</p>`;
  const resp = await fetch(cfg.queryUrl, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf },
    body: JSON.stringify({ query, lexical: $("kbx-lexical").checked, ...options }),
  });
  const answer = await resp.json();
  if (!resp.ok) {
    const msg = answer && answer.error ? answer.error.message : `HTTP ${resp.status}`;
    $("kbx-panel-body").innerHTML = `<p class="kbx-error">${esc(msg)}</p>`;
    throw new Error(msg);
  }
  state.answer = answer;
  for (const r of answer.results || []) state.titles.set(r.id, r.title);
  const ids = [...new Set(answerIds(answer))];
  if (cfg.large && ids.length) {
    // A large bank is not drawn whole: draw the answer with its neighbourhood.
    await openView({ level: "around", ids: ids.slice(0, 200) }, { keepAnswer: true });
  }
  state.highlighted = new Set(ids.filter((id) => state.byId.has(id)));
  relight();
  renderAnswer(answer);
  resolveTitles(ids).then((found) => { if (found && state.answer === answer) renderAnswer(answer); });
  refreshStyles();
  document.body.classList.add("kbx-lit");
  fitAll(800);
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  return state.highlighted;
}

function clearQuery() {
  state.answer = null;
  state.highlighted = new Set();
  relight();
  refreshStyles();
  document.body.classList.remove("kbx-lit");
  $("kbx-panel-body").innerHTML = "<p class=\"kbx-hint\">Cleared. Click an entry or ask a question.</p>";
  fitAll(600);
}

// --- views: the whole bank, or (large banks) the community overview and drill-downs ----------

async function resolveTitles(ids) {
  // Titles of answer entries this view does not hold (one entry read each, at most 60).
  const missing = ids.filter((id) => !titleOf(id)).slice(0, 60);
  await Promise.all(missing.map(async (id) => {
    const resp = await fetch(cfg.entryUrl.replace("__ID__", encodeURIComponent(id)), {
      headers: { Accept: "application/json" }, credentials: "same-origin",
    });
    if (resp.ok) state.titles.set(id, (await resp.json()).title);
  }));
  return missing.length > 0;
}

async function fetchJson(url) {
  const resp = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) throw new Error(body.error ? body.error.message : `HTTP ${resp.status}`);
  return body;
}

function useEntries(data) {
  state.data = data;
  state.byId = new Map(data.nodes.map((n) => [n.id, n]));
  remember(data.nodes);
  state.filters.kinds.clear();
  state.filters.relations.clear();
  state.filters.sources.clear();
  buildFilterBoxes($("kbx-kinds"), new Set(data.nodes.map((n) => n.kind)), state.filters.kinds,
    tally(data.nodes, "kind"), redraw);
  buildFilterBoxes($("kbx-relations"), new Set(data.links.map((l) => l.relation)),
    state.filters.relations, tally(data.links, "relation"), redraw);
  buildFilterBoxes($("kbx-sources"), new Set(data.links.map((l) => l.source)),
    state.filters.sources, tally(data.links, "source"), redraw);
}

function showStageBar(view, data) {
  const bar = $("kbx-stagebar");
  const info = describeView(view, data, cfg, state.overview);
  bar.hidden = !info.where && !info.notice;
  $("kbx-back").hidden = !cfg.large || view.level === "communities";
  $("kbx-where").textContent = info.where;
  const notice = $("kbx-notice");
  notice.textContent = info.notice;
  notice.hidden = !info.notice;
  $("kbx-layout-note").textContent = info.note;
}

// Load and draw one view; resolves when it is drawn.
async function openView(view, { keepAnswer = false } = {}) {
  $("kbx-counts").textContent = "loading…";
  document.body.dataset.view = "loading";
  const bar = $("kbx-stagebar");
  if (view.level !== "entries") {
    bar.hidden = false;
    $("kbx-where").textContent = view.level === "communities"
      ? "Loading the community overview…"
      : "Loading and laying out this view on the server (a few seconds for a big community)…";
    $("kbx-notice").hidden = true;
  }
  const data = await fetchJson(viewUrl(cfg, view));
  state.view = view;
  if (!keepAnswer) {
    state.answer = null;
    state.highlighted = new Set();
    document.body.classList.remove("kbx-lit");
  }
  state.selected = null;
  if (view.level === "communities") {
    state.overview = data;
    state.data = overviewPayload(data);
    state.byId = new Map();
    for (const box of ["kbx-kinds", "kbx-relations", "kbx-sources"]) {
      $(box).innerHTML = '<p class="kbx-hint">Filters apply inside a community or an answer.</p>';
    }
  } else {
    useEntries(data);
  }
  applyFilters();
  relight();
  showStageBar(view, data);
  createGraph(state.mode || initialMode());
  $("kbx-counts").textContent = countsText();
  document.body.dataset.view = view.level;
  return data;
}

function openCommunity(cid) {
  return openView({ level: "community", community: cid }).catch((err) => {
    $("kbx-panel-body").innerHTML = `<p class="kbx-error">${esc(err.message)}</p>`;
  });
}

function initialMode() {
  return !state.webgl || (!cfg.large && state.data.nodes.length > LARGE) ? "2d" : "3d";
}

function addStageBar() {
  const bar = document.createElement("div");
  bar.className = "kbx-stagebar";
  bar.id = "kbx-stagebar";
  bar.hidden = true;
  bar.innerHTML = '<button type="button" id="kbx-back" class="quiet" hidden>← All communities</button>'
    + '<span id="kbx-where"></span><span class="kbx-notice" id="kbx-notice" hidden></span>';
  $("kbx-stage").append(bar);
  $("kbx-back").addEventListener("click", () => { openView({ level: "communities" }); });
}

async function load() {
  if (!state.webgl) {
    const banner = $("kbx-banner");
    banner.hidden = false;
    banner.textContent = "WebGL is not available here: drawing in 2D.";
  }
  const hash = decodeURIComponent(window.location.hash.slice(1));
  if (cfg.large) {
    await openView({ level: "communities" });
    if (hash) await selectNode(hash, true).catch(() => {});
    return;
  }
  await openView({ level: "entries" });
  if (hash && state.byId.has(hash)) setTimeout(() => selectNode(hash, true), 400);
}

function wire() {
  document.querySelectorAll(".kbx-modes button").forEach((b) => {
    b.addEventListener("click", () => setMode(b.dataset.mode));
  });
  $("kbx-hide-backfill").addEventListener("change", (ev) => {
    state.filters.hideBackfill = ev.target.checked;
    redraw();
  });
  $("kbx-query-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    runQuery($("kbx-query").value).catch(() => {});
  });
  $("kbx-query").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      runQuery($("kbx-query").value).catch(() => {});
    }
  });
  $("kbx-query-clear").addEventListener("click", clearQuery);
  addStageBar();
  state.labels = new LabelLayer($("kbx-stage"), () => state.graph, () => state.mode);
  $("kbx-panel").addEventListener("click", (ev) => {
    const link = ev.target.closest("a.kbx-go");
    if (!link) return;
    ev.preventDefault();
    selectNode(link.dataset.id, true);
  });
  window.addEventListener("resize", () => {
    if (!state.graph) return;
    const stage = $("kbx-stage");
    state.graph.width(stage.clientWidth).height(stage.clientHeight);
    updateLabels();
  });
  setupSearch($("kbx-search"), $("kbx-search-results"), () => state.visibleNodes,
    (n) => (n.size !== undefined ? openCommunity(n.cid) : selectNode(n.id, true)), findRemote);
}

let readyResolve;
const ready = new Promise((resolve) => { readyResolve = resolve; });

window.kbExplorer = {
  ready,
  state() {
    return {
      nodes: state.visibleNodes.map((n) => n.id),
      links: state.visibleLinks.map((l) => ({ id: l.id, from: l.from, to: l.to, relation: l.relation })),
      highlighted: [...state.highlighted].sort(),
      litLinks: [...state.litLinks].sort((a, b) => a - b),
      mode: state.mode,
      webgl: state.webgl,
      selected: state.selected,
      total: state.data.nodes.length,
      view: state.view,
      large: Boolean(cfg.large),
      truncated: Boolean(state.data.truncated),
      labels: state.labels ? state.labels.visible() : [],
    };
  },
  open(view) { return openView(view); },
  async query(text, options) {
    await ready;
    return [...(await runQuery(text, options || {}))].sort();
  },
  clear: clearQuery,
  setMode(mode) { setMode(mode); return state.mode; },
  select(id) { return selectNode(id, true); },
};

wire();
load().then(() => { document.body.dataset.ready = "true"; readyResolve(); }).catch((err) => {
  $("kbx-counts").textContent = `Could not load the graph: ${err.message}`;
  document.body.dataset.ready = "error";
  readyResolve();
});
