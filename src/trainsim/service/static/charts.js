// Inline-SVG charts (no library, works offline): stacked bar, bars, scatter, timeline.
"use strict";

const Charts = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                  "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

  function el(name, attrs, text) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function svg(width, height, label) {
    return el("svg", { viewBox: `0 0 ${width} ${height}`, width: "100%", role: "img",
                       "aria-label": label, class: "chart" });
  }

  function ticks(lo, hi, n) {
    const span = hi - lo || Math.abs(hi) || 1;
    const step0 = span / n;
    const mag = Math.pow(10, Math.floor(Math.log10(step0)));
    const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= step0);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-12; v += step) out.push(+v.toPrecision(12));
    return out;
  }

  // parts: [{label, value}] drawn as one horizontal bar, with a legend
  function stacked(parts, unit, label) {
    const W = 640, H = 70 + 18 * Math.ceil(parts.length / 3);
    const s = svg(W, H, label);
    const total = parts.reduce((a, p) => a + Math.max(0, p.value), 0) || 1;
    let x = 10;
    parts.forEach((p, i) => {
      const w = (Math.max(0, p.value) / total) * (W - 20);
      const r = el("rect", { x, y: 10, width: Math.max(0, w), height: 30, fill: COLORS[i % 10] });
      r.appendChild(el("title", {}, `${p.label}: ${p.value.toPrecision(4)} ${unit}`));
      s.appendChild(r);
      x += w;
    });
    parts.forEach((p, i) => {
      const lx = 10 + (i % 3) * 210, ly = 60 + 18 * Math.floor(i / 3);
      s.appendChild(el("rect", { x: lx, y: ly - 10, width: 10, height: 10, fill: COLORS[i % 10] }));
      s.appendChild(el("text", { x: lx + 14, y: ly, class: "small" },
        `${p.label} ${p.value.toPrecision(3)} ${unit} (${(100 * p.value / total).toFixed(1)}%)`));
    });
    return s;
  }

  // groups: [{label, parts: [{label, value}]}] as vertical stacked bars (memory per stage)
  function bars(groups, unit, label) {
    const names = groups.length ? groups[0].parts.map(p => p.label) : [];
    const legendRows = Math.ceil(names.length / 4);
    const W = 640, H = 240 + 18 * legendRows, L = 60, B = 22 + 18 * legendRows;
    const s = svg(W, H, label);
    const max = Math.max(1e-12, ...groups.map(g => g.parts.reduce((a, p) => a + p.value, 0)));
    const bw = Math.min(60, (W - L - 20) / groups.length * 0.7);
    ticks(0, max, 4).forEach(t => {
      const y = H - B - (t / max) * (H - B - 20);
      s.appendChild(el("line", { x1: L, x2: W - 10, y1: y, y2: y, class: "gridline" }));
      s.appendChild(el("text", { x: L - 6, y: y + 4, class: "small", "text-anchor": "end" }, `${t}`));
    });
    groups.forEach((g, gi) => {
      const x = L + 10 + gi * (W - L - 20) / groups.length;
      let y = H - B;
      g.parts.forEach((p, i) => {
        const h = (p.value / max) * (H - B - 20);
        const r = el("rect", { x, y: y - h, width: bw, height: Math.max(0, h), fill: COLORS[i % 10] });
        r.appendChild(el("title", {}, `${g.label} ${p.label}: ${p.value.toFixed(2)} ${unit}`));
        s.appendChild(r);
        y -= h;
      });
      s.appendChild(el("text", { x: x + bw / 2, y: H - B + 14, class: "small", "text-anchor": "middle" }, g.label));
    });
    s.appendChild(el("text", { x: 12, y: 14, class: "small" }, unit));
    names.forEach((name, i) => {
      const lx = L + (i % 4) * 140, ly = H - B + 30 + 18 * Math.floor(i / 4);
      s.appendChild(el("rect", { x: lx, y: ly - 9, width: 10, height: 10, fill: COLORS[i % 10] }));
      s.appendChild(el("text", { x: lx + 14, y: ly, class: "small" }, name));
    });
    return s;
  }

  // points: [{x, y, label, highlight}] ; opts: {xLabel, yLabel, diagonal}
  function scatter(points, opts) {
    const W = 640, H = 360, L = 64, B = 44;
    const s = svg(W, H, opts.label || "scatter");
    const xs = points.map(p => p.x), ys = points.map(p => p.y);
    let x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
    if (opts.diagonal) { x0 = y0 = Math.min(x0, y0); x1 = y1 = Math.max(x1, y1); }
    const pad = (a, b) => (b - a) * 0.05 || Math.abs(a) * 0.05 || 1;
    const px = pad(x0, x1), py = pad(y0, y1);
    x0 -= px; x1 += px; y0 -= py; y1 += py;
    const X = v => L + (v - x0) / (x1 - x0) * (W - L - 16);
    const Y = v => H - B - (v - y0) / (y1 - y0) * (H - B - 16);
    ticks(x0, x1, 6).forEach(t => {
      s.appendChild(el("line", { x1: X(t), x2: X(t), y1: 16, y2: H - B, class: "gridline" }));
      s.appendChild(el("text", { x: X(t), y: H - B + 14, class: "small", "text-anchor": "middle" }, `${t}`));
    });
    ticks(y0, y1, 5).forEach(t => {
      s.appendChild(el("line", { x1: L, x2: W - 16, y1: Y(t), y2: Y(t), class: "gridline" }));
      s.appendChild(el("text", { x: L - 6, y: Y(t) + 4, class: "small", "text-anchor": "end" }, `${t}`));
    });
    if (opts.diagonal) {
      s.appendChild(el("line", { x1: X(x0), y1: Y(x0), x2: X(x1), y2: Y(x1), class: "diag" }));
    }
    points.forEach(p => {
      const c = el("circle", { cx: X(p.x), cy: Y(p.y), r: p.highlight ? 5 : 3.5,
                               fill: p.highlight ? "#e15759" : "#4e79a7", "fill-opacity": 0.8 });
      c.appendChild(el("title", {}, p.label));
      s.appendChild(c);
    });
    s.appendChild(el("text", { x: (L + W) / 2, y: H - 8, class: "small", "text-anchor": "middle" }, opts.xLabel));
    s.appendChild(el("text", { x: 14, y: H / 2, class: "small", "text-anchor": "middle",
                               transform: `rotate(-90 14 ${H / 2})` }, opts.yLabel));
    return s;
  }

  // Chrome-trace complete events ("ph": "X") as one row per (pid, tid)
  function timeline(events, label) {
    const spans = events.filter(e => e.ph === "X" && e.dur > 0);
    const procs = {}, names = {};
    events.filter(e => e.ph === "M" && e.name === "process_name")
      .forEach(e => { procs[e.pid] = (e.args && e.args.name || "").replace("pipeline ", ""); });
    events.filter(e => e.ph === "M" && e.name === "thread_name")
      .forEach(e => { names[`${e.pid}/${e.tid}`] = `${procs[e.pid] || e.pid}: ${e.args && e.args.name}`; });
    const rows = [...new Set(spans.map(e => `${e.pid}/${e.tid}`))].slice(0, 24);
    const W = 900, R = 16, L = 150, H = 30 + rows.length * R;
    const s = svg(W, H, label);
    if (!spans.length) return s;
    const t0 = Math.min(...spans.map(e => e.ts)), t1 = Math.max(...spans.map(e => e.ts + e.dur));
    const X = v => L + (v - t0) / (t1 - t0 || 1) * (W - L - 10);
    const kinds = {};
    rows.forEach((row, i) => {
      s.appendChild(el("text", { x: L - 6, y: 24 + i * R + 11, class: "small", "text-anchor": "end" },
        (names[row] || row).slice(0, 24)));
    });
    const shown = spans.filter(e => rows.includes(`${e.pid}/${e.tid}`)).slice(0, 30000);
    shown.forEach(e => {
      const i = rows.indexOf(`${e.pid}/${e.tid}`);
      const kind = (e.cat || e.name || "").split(/[ :]/)[0];
      if (!(kind in kinds)) kinds[kind] = Object.keys(kinds).length;
      const r = el("rect", { x: X(e.ts), y: 24 + i * R, width: Math.max(0.5, X(e.ts + e.dur) - X(e.ts)),
                             height: R - 3, fill: COLORS[kinds[kind] % 10] });
      r.appendChild(el("title", {}, `${e.name}: ${(e.dur / 1000).toFixed(3)} ms`));
      s.appendChild(r);
    });
    s.appendChild(el("text", { x: L, y: 14, class: "small" },
      `${((t1 - t0) / 1e6).toFixed(3)} s shown; ${shown.length} of ${spans.length} spans`));
    return s;
  }

  return { stacked, bars, scatter, timeline };
})();
