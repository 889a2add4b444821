// The meshlearn dashboard: polls /api/state once a second and redraws in place.
// Matrices are SVG (one rect per cell, updated only where a value changed); curves are uPlot.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const state = { method: null, node: null, charts: {}, lastNodeRound: null, doc: null };

const fmt = {
  num: (v, d = 4) => (v === null || v === undefined || Number.isNaN(v)) ? "–" : Number(v).toPrecision(d),
  int: (v) => (v === null || v === undefined) ? "–" : String(v),
  bytes: (v) => {
    if (v === null || v === undefined) return "–";
    const units = ["B", "KiB", "MiB", "GiB"];
    let x = v, u = 0;
    while (x >= 1024 && u < units.length - 1) { x /= 1024; ++u; }
    return `${u ? x.toFixed(1) : x} ${units[u]}`;
  },
  secs: (s) => {
    if (s === null || s === undefined) return "–";
    s = Math.round(s);
    return s >= 3600 ? `${Math.floor(s / 3600)}h ${Math.floor(s % 3600 / 60)}m` : s >= 60 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${s}s`;
  },
};

// A colour ramp from near-white to deep blue; grey for unknown values.
function blue(t) {
  if (t === null || Number.isNaN(t)) return "#e4e6ea";
  t = Math.max(0, Math.min(1, t));
  const a = [247, 251, 255], b = [8, 48, 107];
  const c = a.map((x, k) => Math.round(x + (b[k] - x) * Math.sqrt(t)));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

const tooltip = document.createElement("div");
tooltip.id = "tooltip";
document.body.appendChild(tooltip);

// An SVG matrix of unit cells with row and column labels and cluster frames.
class MatrixView {
  // stretch: cells fill a fixed-size box (for few rows of many columns), without labels.
  constructor(svg, describe, stretch = false) {
    this.svg = svg;
    this.describe = describe;  // (rowLabel, colLabel, value) -> tooltip text
    this.stretch = stretch;
    this.key = null;
    this.cells = [];
    this.values = [];
    svg.addEventListener("mousemove", (e) => {
      const d = e.target.dataset;
      if (d.i === undefined) { tooltip.style.display = "none"; return; }
      tooltip.textContent = this.describe(d.i, d.j, this.values[+d.r][+d.c]);
      tooltip.style.left = `${e.clientX + 12}px`;
      tooltip.style.top = `${e.clientY + 12}px`;
      tooltip.style.display = "block";
    });
    svg.addEventListener("mouseleave", () => { tooltip.style.display = "none"; });
  }

  // rows, cols: labels; values[r][c] (null = unknown); scale(v) -> [0, 1];
  // frames: [[start, end), ...] blocks on the diagonal; onRow(r): click on a row.
  render(rows, cols, values, scale, frames = [], onRow = null) {
    const key = rows.join(",") + "|" + cols.join(",");
    const margin = this.stretch ? 0 : 3;
    if (key !== this.key) {
      this.key = key;
      this.svg.replaceChildren();
      const w = cols.length + margin, h = rows.length + margin;
      this.svg.setAttribute("viewBox", `${-margin} ${-margin} ${w} ${h}`);
      const px = Math.max(360, Math.min(620, cols.length * 12));
      this.svg.setAttribute("width", px);
      if (this.stretch) {
        this.svg.setAttribute("preserveAspectRatio", "none");
        this.svg.setAttribute("height", Math.max(60, Math.min(360, rows.length * 14)));
      } else {
        this.svg.setAttribute("height", Math.round(px * h / w));
      }
      const every = Math.max(1, Math.ceil(Math.max(rows.length, cols.length) / 25));
      const frag = document.createDocumentFragment();
      this.cells = rows.map((rl, r) => cols.map((cl, c) => {
        const rect = document.createElementNS(SVG, "rect");
        rect.setAttribute("x", c);
        rect.setAttribute("y", r);
        rect.setAttribute("width", 1);
        rect.setAttribute("height", 1);
        rect.setAttribute("class", "cell");
        rect.dataset.r = r;
        rect.dataset.c = c;
        rect.dataset.i = rl;
        rect.dataset.j = cl;
        if (onRow) rect.addEventListener("click", () => onRow(r));
        frag.appendChild(rect);
        return rect;
      }));
      const label = (text, x, y, anchor, rotate) => {
        const t = document.createElementNS(SVG, "text");
        t.setAttribute("x", x);
        t.setAttribute("y", y);
        t.setAttribute("text-anchor", anchor);
        if (rotate) t.setAttribute("transform", `rotate(-90 ${x} ${y})`);
        t.textContent = text;
        frag.appendChild(t);
      };
      if (!this.stretch) {
        rows.forEach((rl, r) => { if (r % every === 0) label(rl, -0.3, r + 0.75, "end", false); });
        cols.forEach((cl, c) => { if (c % every === 0) label(cl, c + 0.75, -0.3, "start", true); });
      }
      for (const [a, b] of frames) {
        const f = document.createElementNS(SVG, "rect");
        f.setAttribute("class", "frame");
        f.setAttribute("x", a);
        f.setAttribute("y", a);
        f.setAttribute("width", b - a);
        f.setAttribute("height", b - a);
        frag.appendChild(f);
      }
      this.svg.appendChild(frag);
      this.values = rows.map(() => cols.map(() => undefined));
    }
    for (let r = 0; r < rows.length; ++r) {
      for (let c = 0; c < cols.length; ++c) {
        const v = values[r] ? values[r][c] : null;
        if (this.values[r][c] === v) continue;
        this.values[r][c] = v;
        const rect = this.cells[r][c];
        rect.setAttribute("fill", blue(v === null ? null : scale(v)));
        rect.dataset.value = v === null ? "" : String(v);
      }
    }
  }
}

// Blocks of equal consecutive cluster labels: [[start, end), ...].
function blocks(labels) {
  const out = [];
  let start = 0;
  for (let k = 1; k <= labels.length; ++k) {
    if (k === labels.length || labels[k] !== labels[start]) { out.push([start, k]); start = k; }
  }
  return out;
}

const heatmap = new MatrixView($("heatmap"), (i, j, v) => `node ${i} sampled node ${j}: ${v === null ? "unknown" : v} time(s)`);
const emdView = new MatrixView($("emd"), (i, j, v) => `EMD(${i}, ${j}) = ${fmt.num(v)}`);
const probView = new MatrixView($("node-probabilities"), (r, j, v) => `round ${r}: p(${j}) = ${fmt.num(v, 3)}`, true);
const scoreView = new MatrixView($("node-scores"), (r, j, v) => `round ${r}: s(${j}) = ${fmt.num(v, 4)}`, true);

const palette = ["#3b6fd1", "#d1242f", "#1c7c3a", "#9a6700", "#8250df", "#0a7ea4", "#bf3989", "#57606a", "#e16f24", "#2da44e"];

// A uPlot line chart kept in `state.charts[name]`; rebuilt when its series change.
function lineChart(name, container, rounds, series, yLabel) {
  const key = series.map((s) => s.label).join("|");
  let chart = state.charts[name];
  const data = [rounds, ...series.map((s) => s.values)];
  if (!chart || chart.key !== key) {
    if (chart) chart.plot.destroy();
    container.replaceChildren();
    const width = Math.max(360, container.clientWidth - 10);
    const plot = new uPlot({
      width, height: 220,
      scales: { x: { time: false } },
      axes: [{ label: "round", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }, { label: yLabel, size: 60 }],
      series: [{ label: "round" }, ...series.map((s, k) => ({ label: s.label, stroke: palette[k % palette.length], width: 2, spanGaps: true }))],
    }, data, container);
    state.charts[name] = { plot, key };
  } else {
    chart.plot.setData(data);
  }
}

function selectMethod(name) {
  state.method = name;
  state.node = null;
  $("node-panel").hidden = true;
  poll();
}

function renderMethods(doc) {
  const body = document.createElement("tbody");
  for (const m of doc.methods) {
    const tr = document.createElement("tr");
    tr.dataset.method = m.name;
    if (m.name === doc.method) tr.className = "selected";
    const done = m.rounds > 0 ? Math.max(0, m.reached_mean) / m.rounds : 0;
    const rounds = m.reached_min < 0 ? "–" : `${m.reached_min}–${fmt.num(m.reached_mean, 3)} of ${m.rounds}`;
    tr.innerHTML = `<td></td><td class="state-${m.state}">${m.state}</td>` +
      `<td><span class="progress"><span style="width:${Math.round(100 * Math.min(1, done))}%"></span></span>${rounds}</td>` +
      `<td>${fmt.secs(m.elapsed_s)}</td><td>${m.state === "running" ? fmt.secs(m.eta_s) : "–"}</td>` +
      `<td>${m.time_to_target_s == null ? "–" : fmt.secs(m.time_to_target_s)}</td><td>${m.source || "–"}</td>`;
    tr.firstChild.textContent = m.name;
    tr.addEventListener("click", () => selectMethod(m.name));
    body.appendChild(tr);
  }
  $("methods").replaceChild(body, $("methods").tBodies[0]);
}

function renderNodes(doc) {
  const body = document.createElement("tbody");
  for (const n of doc.table) {
    const tr = document.createElement("tr");
    tr.dataset.id = n.id;
    if (!n.answering) tr.classList.add("silent");
    if (n.id === state.node) tr.classList.add("selected");
    const cells = [
      ["id", n.id], ["cluster", n.cluster], ["round", n.round < 0 ? "–" : n.round],
      ["val_loss", fmt.num(n.val_loss)], ["peers_alive", n.peers_alive === null ? "–" : `${n.peers_alive} / ${n.peers_known}`],
      ["bytes_in", fmt.bytes(n.bytes_in)], ["bytes_out", fmt.bytes(n.bytes_out)], ["failures", n.failures],
    ];
    for (const [field, text] of cells) {
      const td = document.createElement("td");
      td.dataset.field = field;
      td.textContent = text;
      tr.appendChild(td);
    }
    tr.children[5].dataset.value = n.bytes_in;
    tr.children[6].dataset.value = n.bytes_out;
    tr.children[3].dataset.value = n.val_loss === null ? "" : n.val_loss;
    const page = document.createElement("td");
    if (n.http_port) {
      const a = document.createElement("a");
      a.href = `http://${location.hostname}:${n.http_port}/`;
      a.textContent = `:${n.http_port}`;
      a.target = "_blank";
      a.addEventListener("click", (e) => e.stopPropagation());
      page.appendChild(a);
    } else {
      page.textContent = "–";
    }
    tr.appendChild(page);
    tr.addEventListener("click", () => { state.node = n.id; state.lastNodeRound = null; renderNodeDetail(); });
    body.appendChild(tr);
  }
  $("nodes").replaceChild(body, $("nodes").tBodies[0]);
}

function renderHeatmap(doc) {
  let max = 1;
  for (const row of doc.heatmap) for (const v of row) if (v !== null && v > max) max = v;
  heatmap.render(doc.nodes, doc.nodes, doc.heatmap, (v) => v / max, blocks(doc.clusters));
  $("heatmap-legend").innerHTML = `0 <span class="ramp" style="background:linear-gradient(90deg,${blue(0)},${blue(0.25)},${blue(1)})"></span> ${max} samples; grey: unknown`;
}

function renderCurves(doc) {
  const longest = doc.methods.reduce((a, m) => (m.curve.rounds.length > a.length ? m.curve.rounds : a), []);
  const pad = (values) => longest.map((_, k) => (k < values.length ? values[k] : null));
  const withData = doc.methods.filter((m) => m.curve.rounds.length > 0);
  if (withData.length) {
    lineChart("methods", $("chart-methods"), longest, withData.map((m) => ({ label: m.name, values: pad(m.curve.mean) })), doc.metric);
  }
  const m = doc.methods.find((x) => x.name === doc.method);
  if (m && m.curve.rounds.length) {
    lineChart("clusters", $("chart-clusters"), m.curve.rounds, m.curve.clusters.map((values, c) => ({ label: `cluster ${c}`, values })), doc.metric);
  }
}

function renderEmd(doc) {
  const panel = $("emd-panel");
  if (!doc.emd && !doc.policy) { panel.hidden = true; return; }
  panel.hidden = false;
  if (doc.emd) {
    let max = 1e-12;
    for (const row of doc.emd.matrix) for (const v of row) if (v !== null && v > max) max = v;
    emdView.render(doc.nodes, doc.nodes, doc.emd.matrix, (v) => v / max, blocks(doc.clusters));
    $("emd-note").textContent = `Adjusted Rand index of the clusters found against the ground truth: ${fmt.num(doc.emd.ari, 3)}. Dark: far apart; light: same distribution.`;
    const groups = new Map();
    doc.emd.found.forEach((label, k) => { if (!groups.has(label)) groups.set(label, []); groups.get(label).push(doc.nodes[k]); });
    const list = $("emd-clusters");
    list.replaceChildren(...[...groups.values()].map((ids) => {
      const li = document.createElement("li");
      li.textContent = ids.join(", ");
      return li;
    }));
  } else {
    $("emd").replaceChildren();
    $("emd-clusters").replaceChildren();
    $("emd-note").textContent = `Clustering policy: mean adjusted Rand index of the nodes' own partitions ${fmt.num(doc.policy.ari, 3)} (${doc.policy.clustered_nodes} nodes clustered, mean round ${fmt.num(doc.policy.mean_round, 3)}).`;
  }
}

async function renderNodeDetail() {
  if (!state.node || !state.doc) { $("node-panel").hidden = true; return; }
  const doc = state.doc;
  const row = doc.table.find((n) => n.id === state.node);
  if (row && state.lastNodeRound === row.round) return;  // nothing new
  const response = await fetch(`api/node?method=${encodeURIComponent(doc.method)}&id=${encodeURIComponent(state.node)}`, { cache: "no-store" });
  if (!response.ok) return;
  const n = await response.json();
  state.lastNodeRound = row ? row.round : null;
  $("node-panel").hidden = false;
  $("node-title").textContent = `${n.id} (cluster ${n.cluster}, ${n.method})`;
  const keep = 60;  // the latest rounds
  const first = Math.max(0, n.rounds.length - keep);
  const rounds = n.rounds.slice(first).map(String);
  const probs = n.probabilities.slice(first), scores = n.scores.slice(first);
  let pmax = 1e-12, smin = Infinity, smax = -Infinity;
  for (const r of probs) for (const v of r) if (v !== null && v > pmax) pmax = v;
  for (const r of scores) for (const v of r) if (v !== null) { smin = Math.min(smin, v); smax = Math.max(smax, v); }
  probView.render(rounds, n.peers, probs, (v) => v / pmax);
  scoreView.render(rounds, n.peers, scores, (v) => (smax > smin ? (v - smin) / (smax - smin) : 1));
  $("node-note").textContent = n.rounds.length
    ? `${n.rounds.length} round(s) recorded${n.rounds.length > keep ? `, the latest ${keep} shown` : ""}; columns: peers by cluster. ` +
      (doc.methods.find((m) => m.name === doc.method).source === "files" ? "From the run folder: the live rounds seen, then scores.csv." : "Live from the node's /status.")
    : "No round recorded yet.";
  const last = probs.length ? probs[probs.length - 1] : [];
  const top = n.peers.map((p, k) => [p, last[k]]).filter(([, v]) => v !== null && v !== undefined).sort((a, b) => b[1] - a[1]).slice(0, 8);
  $("node-top").replaceChildren(...top.map(([p, v]) => {
    const li = document.createElement("li");
    li.textContent = `node ${p}: ${fmt.num(v, 3)}`;
    return li;
  }));
}

let timer = null;
async function poll() {
  clearTimeout(timer);
  try {
    const url = state.method ? `api/state?method=${encodeURIComponent(state.method)}` : "api/state";
    const response = await fetch(url, { cache: "no-store" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const doc = await response.json();
    const began = performance.now();
    state.doc = doc;
    $("scenario").textContent = `${doc.scenario} (${doc.mode})`;
    document.querySelectorAll(".method-name").forEach((e) => { e.textContent = doc.method || ""; });
    document.querySelectorAll(".metric-name").forEach((e) => { e.textContent = doc.metric; });
    renderMethods(doc);
    if (doc.method) {
      renderHeatmap(doc);
      renderNodes(doc);
      renderCurves(doc);
      renderEmd(doc);
    }
    const ms = performance.now() - began;  // the redraw, without the node panel's own fetch
    if (doc.method) await renderNodeDetail();
    const running = doc.methods.some((m) => m.state === "running");
    const c = $("connection");
    c.className = running ? "live" : "finished";
    c.textContent = running ? `live · updated ${new Date().toLocaleTimeString()}` : `not running · ${doc.out_dir}`;
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
    document.body.dataset.observations = doc.observations;
    document.body.dataset.method = doc.method || "";
    document.body.dataset.renderMs = ms.toFixed(1);
    $("footer").textContent = `${doc.nodes.length} nodes · redrawn in ${ms.toFixed(0)} ms · ${doc.out_dir}`;
  } catch (e) {
    const c = $("connection");
    c.className = "lost";
    c.textContent = `the launcher does not answer (${e.message}): the run ended or was stopped. ` +
      "`meshlearn-launch serve RUN_DIR --dashboard PORT` shows a finished run.";
  }
  timer = setTimeout(poll, 1000);
}

$("node-close").addEventListener("click", () => { state.node = null; $("node-panel").hidden = true; });
poll();
