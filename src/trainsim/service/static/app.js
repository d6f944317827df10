// trainsim's web UI: a single page over the /api/v1 API (nothing else is fetched).
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const view = () => $("#view");
const GiB = 2 ** 30;
let pollTimer = null;
// each route() draws one page; a view still awaiting the server when the user has moved on
// (signed in, then opened "New run" before the runs list came back) must not draw over it
let routeSeq = 0;
const stale = seq => seq !== routeSeq;

function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== false && v !== null && v !== undefined) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

const fmt = {
  s: v => v == null ? "–" : v >= 100 ? `${v.toFixed(0)} s` : v >= 1 ? `${v.toFixed(3)} s` : `${(v * 1e3).toFixed(2)} ms`,
  n: (v, d = 0) => v == null ? "–" : Number(v).toLocaleString(undefined, { maximumFractionDigits: d }),
  pct: v => v == null ? "–" : `${(100 * v).toFixed(1)}%`,
  gib: v => v == null ? "–" : `${(v / GiB).toFixed(1)} GiB`,
  usd: v => v == null ? "–" : `$${Number(v).toLocaleString(undefined, { maximumFractionDigits: 0 })}`,
};

// ------------------------------------------------------------------------------ API

function token() { return localStorage.getItem("trainsim-token") || ""; }

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(`/api/v1${path}`, { method, headers,
    body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let data = text;
  try { data = JSON.parse(text); } catch (e) { /* a plain-text body */ }
  return { status: r.status, ok: r.ok, data, text };
}

const catalogCache = {};
async function catalog(kind) {
  if (!catalogCache[kind]) {
    const r = await api("GET", `/catalog/${kind}`);
    if (!r.ok) throw new Error(r.data.error || `catalog ${kind}: HTTP ${r.status}`);
    catalogCache[kind] = r.data;
  }
  return catalogCache[kind];
}

function needToken() {
  view().replaceChildren(h("section", { class: "card" }, h("h2", {}, "API token needed"),
    h("p", {}, "Create one on the server with ", h("code", {}, "trainsim token create NAME"),
      " and paste it at the top right.")));
}

function errorBox(message) { return h("p", { class: "error", role: "alert" }, message); }

// ------------------------------------------------------------------------------ runs list

async function viewRuns() {
  const seq = routeSeq;
  const r = await api("GET", "/jobs?limit=200");
  if (stale(seq)) return;
  if (r.status === 401) return needToken();
  const rows = r.data.map(j => h("tr", {},
    h("td", {}, j.kind === "simulate" && j.status === "done"
      ? h("input", { type: "checkbox", class: "pick", value: j.id, "aria-label": "compare" }) : ""),
    h("td", {}, h("a", { href: `#/job/${j.id}` }, j.id.slice(0, 8))),
    h("td", {}, j.kind), h("td", { class: `st-${j.status}` }, j.status),
    h("td", {}, j.status === "running" ? fmt.pct(j.progress) : ""),
    h("td", {}, new Date(j.created_at * 1000).toLocaleString()),
    h("td", { class: "err" }, j.error || "")));
  view().replaceChildren(h("section", { class: "card" }, h("h2", {}, "Your runs"),
    h("p", {}, h("a", { href: "#/new", class: "button" }, "New run"), " ",
      h("button", { onclick: () => {
        const ids = [...document.querySelectorAll(".pick:checked")].map(c => c.value);
        location.hash = `#/compare/${ids.join(",")}`;
      } }, "Compare selected")),
    rows.length ? h("table", {}, h("thead", {}, h("tr", {}, ["", "job", "kind", "status", "progress",
      "created", "error"].map(c => h("th", {}, c)))), h("tbody", {}, rows))
      : h("p", {}, "No runs yet.")));
  if (r.data.some(j => j.status === "queued" || j.status === "running")) {
    pollTimer = setTimeout(viewRuns, 2000);
  }
}

// ------------------------------------------------------------------------------ new run

const FORM_FIELDS = [
  // [id, config path, label, kind]
  ["model", "model", "Model", "select"],
  ["node", "cluster.node", "Node", "select"],
  ["gpu", "cluster.gpu", "GPU (when no node)", "select"],
  ["num_gpus", "cluster.num_gpus", "GPUs", "int"],
  ["tp", "parallel.tp", "Tensor parallel", "int"],
  ["pp", "parallel.pp", "Pipeline parallel", "int"],
  ["vpp", "parallel.vpp", "Virtual pipeline (chunks)", "int"],
  ["cp", "parallel.cp", "Context parallel", "int"],
  ["sequence_parallel", "parallel.sequence_parallel", "Sequence parallel", "bool"],
  ["distributed_optimizer", "parallel.distributed_optimizer", "Distributed optimizer", "bool"],
  ["recompute", "parallel.recompute", "Recompute", "choice:none,selective,full"],
  ["global_batch_size", "training.global_batch_size", "Global batch (sequences)", "int"],
  ["micro_batch_size", "training.micro_batch_size", "Micro-batch", "int"],
  ["seq_length", "training.seq_length", "Sequence length", "int"],
  ["dtype", "training.dtype", "dtype", "choice:bf16,fp16,fp8"],
  ["train_tokens", "training.train_tokens", "Training tokens (days, cost)", "si"],
];
const DEFAULTS = { model: "llama3-8b", node: "dgx-h100", gpu: "h100-sxm-80gb", num_gpus: 8,
  tp: 2, pp: 1, vpp: "", cp: 1, sequence_parallel: true, distributed_optimizer: true,
  recompute: "none", global_batch_size: 128, micro_batch_size: 1, seq_length: 8192,
  dtype: "bf16", train_tokens: "100B" };

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function configFromForm() {
  const cfg = { model: null, parallel: {}, training: {}, cluster: {} };
  for (const [id, path, , kind] of FORM_FIELDS) {
    const input = $(`#f-${id}`);
    let v = kind === "bool" ? input.checked : input.value.trim();
    if (v === "" || v === null) continue;
    // a number typed as a plain literal goes as that number; anything else ("15T", "2,048",
    // "8 GPUs") as the text typed, for the server to read as a config file's or refuse
    // naming the field: parseInt read "8.9" as 8 and "1e3" as 1, Number("15T") was NaN, sent
    // as null, the field dropped (robust57)
    // a count with a decimal multiple ("15T", "300B") goes as typed: the config reads it
    // (config.number_text.si_float) or refuses it naming the field (robust57 lead 2)
    if ((kind === "int" || kind === "num" || kind === "si") && NUMBER.test(v)) v = Number(v);
    if (id === "gpu" && $("#f-node").value) continue;  // the node names its GPU
    const [section, key] = path.split(".");
    if (key) cfg[section][key] = v; else cfg[section] = v;
  }
  return cfg;
}

function showFieldError(message) {
  // put the server's message under the input its field names ("parallel.tp=3 does not ...")
  document.querySelectorAll(".field-error").forEach(e => e.remove());
  document.querySelectorAll(".invalid").forEach(e => e.classList.remove("invalid"));
  const aliases = { tensor_model_parallel_size: "tp", pipeline_model_parallel_size: "pp",
    context_parallel_size: "cp", virtual_pipeline_model_parallel_size: "vpp" };
  const found = [...message.matchAll(/\b(model|parallel|training|cluster)(?:\.([a-z_]+))?/g)];
  for (const m of found) {
    const key = aliases[m[2]] || m[2];
    const field = FORM_FIELDS.find(f => f[1] === `${m[1]}.${key}` || (!m[2] && f[1] === m[1]));
    const input = field && $(`#f-${field[0]}`);
    if (input && input.offsetParent !== null) {
      input.classList.add("invalid");
      input.closest("label").append(h("span", { class: "field-error", role: "alert" }, message));
      input.focus();
      return true;
    }
  }
  return false;
}

async function submitJob(kind, config, options, errorTarget) {
  const r = await api("POST", "/jobs", { kind, config, options });
  if (r.status === 202) { location.hash = `#/job/${r.data.id}`; return; }
  const message = r.data.error || `HTTP ${r.status}`;
  if (!(errorTarget && errorTarget(message, r.data.field))) {
    $("#form-error").replaceChildren(errorBox(`${r.data.field || "error"}: ${message}`));
  }
}

async function viewNew() {
  const seq = routeSeq;
  let models, nodes, gpus;
  try {
    [models, nodes, gpus] = await Promise.all(["models", "nodes", "gpus"].map(catalog));
  } catch (e) { return stale(seq) || needToken(); }
  if (stale(seq)) return;
  const choices = { model: models.map(m => [m.name, m.params ? `${m.name} (${(m.params / 1e9).toFixed(1)}B)` : m.name]),
    node: [["", "— none: pick a GPU —"], ...nodes.map(n => [n.name, `${n.name} (${n.gpus_per_node} × ${n.gpu})`])],
    gpu: gpus.map(g => [g.name, `${g.name} (${g.hbm_gib} GiB, ${g.peak_tflops && g.peak_tflops.bf16} TFLOP/s bf16)`]) };
  const inputs = FORM_FIELDS.map(([id, path, label, kind]) => {
    let input;
    if (kind === "select" || kind.startsWith("choice:")) {
      const opts = kind === "select" ? choices[id] : kind.slice(7).split(",").map(c => [c, c]);
      input = h("select", { id: `f-${id}`, name: path }, opts.map(([v, t]) =>
        h("option", { value: v, selected: String(DEFAULTS[id]) === v }, t)));
    } else if (kind === "bool") {
      input = h("input", { id: `f-${id}`, name: path, type: "checkbox", checked: !!DEFAULTS[id] });
    } else if (kind === "si") {  // a number input refuses "15T" in the browser itself
      input = h("input", { id: `f-${id}`, name: path, type: "text", value: DEFAULTS[id],
                           spellcheck: "false", autocomplete: "off",
                           title: "a number, or with K, M, B (or G), T, P: 15T, 300B, 1.5e13" });
    } else {
      input = h("input", { id: `f-${id}`, name: path, type: "number", value: DEFAULTS[id],
                           step: kind === "num" ? "any" : "1", min: kind === "int" ? "1" : null });
    }
    return h("label", { class: kind === "bool" ? "check" : "" }, h("span", {}, label), input);
  });
  const yamlArea = h("textarea", { id: "yaml", rows: 22, spellcheck: "false",
                                   "aria-label": "run config YAML" });
  const yamlError = h("div", { id: "yaml-error" });
  const formPane = h("form", { id: "run-form", class: "grid", onsubmit: async e => {
    e.preventDefault();
    $("#form-error").replaceChildren();
    await submitJob("simulate", configFromForm(), { trace: true }, showFieldError);
  } }, inputs, h("div", { class: "actions" }, h("button", { type: "submit", id: "run" }, "Simulate"),
    h("button", { type: "button", onclick: () => { yamlArea.value = TrainsimYaml.dump(configFromForm()); tab("yaml"); } },
      "Edit as YAML")));
  const yamlPane = h("form", { id: "yaml-form", hidden: true, onsubmit: async e => {
    e.preventDefault();
    yamlError.replaceChildren();
    // the text as written: the server reads it with the CLI's YAML loader (framework_version:
    // 0.10 stays 0.10, 010 is refused), not a second reader in the browser
    await submitJob("simulate", yamlArea.value, { trace: true }, msg => {
      yamlError.replaceChildren(errorBox(msg));
      const m = /\b(model|parallel|training|cluster)\.([a-z_]+)/.exec(msg);
      if (m) highlightYaml(yamlArea, m[1], m[2]);
      return true;
    });
  } }, h("p", {}, "Paste a run config (as in examples/*.yaml)."), yamlArea, yamlError,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Simulate YAML")));
  const tab = name => {
    formPane.hidden = name !== "form"; yamlPane.hidden = name !== "yaml";
    document.querySelectorAll(".tabs button").forEach(b => b.classList.toggle("on", b.dataset.tab === name));
  };
  view().replaceChildren(h("section", { class: "card" }, h("h2", {}, "New run"),
    h("div", { class: "tabs" },
      h("button", { "data-tab": "form", class: "on", onclick: () => tab("form") }, "From the catalog"),
      h("button", { "data-tab": "yaml", onclick: () => { if (!yamlArea.value) yamlArea.value = TrainsimYaml.dump(configFromForm()); tab("yaml"); } }, "Paste YAML")),
    formPane, yamlPane, h("div", { id: "form-error" })));
}

function highlightYaml(area, section, key) {
  // select the line of the offending key so the error sits at its field
  const lines = area.value.split("\n");
  let inSection = false, offset = 0;
  for (const line of lines) {
    if (/^\S/.test(line)) inSection = line.startsWith(`${section}:`);
    if (inSection && new RegExp(`^\\s+${key}\\s*:`).test(line)) {
      area.focus();
      area.setSelectionRange(offset, offset + line.length);
      return;
    }
    offset += line.length + 1;
  }
}
