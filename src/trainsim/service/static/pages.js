// Result, compare, search, validation and goodput pages, and the router.
"use strict";

function card(label, value, note) {
  return h("div", { class: "metric" }, h("div", { class: "label" }, label),
    h("div", { class: "value" }, value), note ? h("div", { class: "note" }, note) : null);
}

function download(name, text, type = "application/json") {
  const a = h("a", { href: URL.createObjectURL(new Blob([text], { type })), download: name });
  document.body.append(a);
  a.click();
  a.remove();
}

function headline(r) {
  const hbm = r.config && r.config.cluster && r.config.cluster.gpu && r.config.cluster.gpu.hbm_bytes;
  return [
    ["Iteration time", fmt.s(r.iteration_time_s)],
    ["Tokens/s", fmt.n(r.tokens_per_s), `${fmt.n(r.tokens_per_s_per_gpu)} per GPU`],
    ["MFU", fmt.pct(r.mfu), `${fmt.n(r.model_tflops_per_gpu, 0)} TFLOP/s per GPU`],
    ["Memory per GPU", fmt.gib(r.peak_memory_bytes), hbm ? `of ${fmt.gib(hbm)}${r.fits_in_memory ? "" : " — does not fit"}` : ""],
    ["Days", r.run && r.run.days != null ? r.run.days.toFixed(1) : "–", "for training.train_tokens"],
    ["Cost", fmt.usd(r.run && r.run.cost_usd), r.run && r.run.gpu_hours ? `${fmt.n(r.run.gpu_hours)} GPU-hours` : ""],
  ];
}

const MEMORY_PARTS = ["weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                      "buffers_bytes", "context_bytes"];

function simulateResult(job, root) {
  const r = job.result;
  const parts = Object.entries(r.breakdown).filter(([, v]) => v > 1e-12)
    .map(([k, v]) => ({ label: k.replace(/_s$/, ""), value: v }));
  const mem = r.memory || {};
  const stages = (mem.per_stage_bytes || [r.peak_memory_bytes]).map((total, i) => {
    if (i === mem.stage) {
      const known = MEMORY_PARTS.map(k => ({ label: k.replace(/_bytes$/, ""), value: (mem[k] || 0) / GiB }));
      const rest = total / GiB - known.reduce((a, p) => a + p.value, 0);
      return { label: `stage ${i}`, parts: [...known, { label: "other", value: Math.max(0, rest) }] };
    }
    return { label: `stage ${i}`, parts: [...MEMORY_PARTS.map(k => ({ label: k.replace(/_bytes$/, ""), value: 0 })),
                                          { label: "other", value: total / GiB }] };
  });
  const timeline = h("div", { id: "timeline" }, job.has_trace ? "Loading the timeline…" : "No trace kept for this run.");
  root.append(
    h("div", { class: "metrics" }, headline(r).map(([l, v, n]) => card(l, v, n))),
    ...(r.warnings || []).map(w => h("p", { class: "note" }, `warning: ${w}`)),
    h("h3", {}, "Where the iteration time goes"), Charts.stacked(parts, "s", "time breakdown"),
    h("h3", {}, "Memory per pipeline stage (GiB)"),
    h("p", { class: "note" }, `Peak at ${mem.peak_at || "–"}; the peak stage (${mem.stage ?? 0}) is broken down.`),
    Charts.bars(stages, "GiB", "memory per stage"),
    h("h3", {}, "Pipeline timeline"), timeline,
    h("h3", {}, "Downloads"),
    h("p", { class: "downloads" },
      h("button", { onclick: async () => download(`trainsim-${job.id}.json`, (await api("GET", `/jobs/${job.id}/result`)).text) }, "Result JSON"),
      h("button", { onclick: () => download(`trainsim-${job.id}.yaml`, TrainsimYaml.dump(r.config), "text/yaml") }, "Config YAML"),
      job.has_trace ? h("button", { onclick: async () => download(`trainsim-${job.id}-trace.json`, (await api("GET", `/jobs/${job.id}/trace`)).text) }, "Perfetto trace") : null));
  if (job.has_trace) {
    api("GET", `/jobs/${job.id}/trace`).then(t => {
      timeline.replaceChildren(t.ok ? Charts.timeline(t.data.traceEvents, "pipeline timeline")
                                    : errorBox(t.data.error || "no trace"));
    });
  }
}

function rankedTable(entries) {
  return h("table", {}, h("thead", {}, h("tr", {}, ["#", "configuration", "GPUs", "iteration", "tokens/s", "MFU", "memory"].map(c => h("th", {}, c)))),
    h("tbody", {}, entries.map((e, i) => h("tr", {}, h("td", {}, i + 1), h("td", {}, e.label),
      h("td", {}, e.config ? e.config.num_gpus : ""), h("td", {}, fmt.s(e.iteration_time_s)),
      h("td", {}, fmt.n(e.tokens_per_s)), h("td", {}, fmt.pct(e.mfu)), h("td", {}, fmt.gib(e.peak_memory_bytes))))));
}

function searchResult(job, root) {
  const r = job.result;
  const top = r.top || [];
  const pareto = r.pareto || [];
  const best = top[0] && top[0].label;
  root.append(h("h3", {}, `Ranked configurations of ${r.model} on ${(r.gpu_counts || []).join(", ")} × ${r.gpu}`),
    ...(r.warnings || []).map(w => h("p", { class: "note" }, `warning: ${w}`)),
    rankedTable(top),
    h("h3", {}, "Pareto front: iteration time against memory per GPU"),
    pareto.length ? Charts.scatter(pareto.map(e => ({ x: e.peak_memory_bytes / GiB, y: e.iteration_time_s,
      label: `${e.label}: ${fmt.s(e.iteration_time_s)}, ${fmt.gib(e.peak_memory_bytes)}`, highlight: e.label === best })),
      { xLabel: "memory per GPU (GiB)", yLabel: "iteration time (s)", label: "Pareto front" }) : h("p", {}, "No Pareto front."),
    r.stats ? h("p", { class: "note" }, `${fmt.n(r.stats.enumerated)} candidates enumerated, ${fmt.n(r.stats.memory_pruned)} pruned by memory, ${fmt.n(r.stats.simulated)} simulated.`) : null);
}

function validateResult(job, root) {
  const files = job.result.rows ? { uploaded: job.result } : job.result;
  for (const [name, f] of Object.entries(files)) {
    const s = f.summary;
    const groups = { ...(s.by_source || {}), ...(s.by_kind || {}) };
    root.append(h("h3", {}, name),
      h("p", {}, `${s.n} rows, MAPE ${fmt.pct(s.mape)}, max ${fmt.pct(s.max_ape)}` +
        (s.memory_n ? `; memory: ${s.memory_n} rows, MAPE ${fmt.pct(s.memory_mape)}` : "")),
      ...(f.warnings || []).map(w => h("p", { class: "note" }, `warning: ${w}`)),
      h("table", {}, h("thead", {}, h("tr", {}, ["framework / group", "rows", "MAPE", "mean signed error"].map(c => h("th", {}, c)))),
        h("tbody", {}, Object.entries(groups).map(([k, g]) => h("tr", {}, h("td", {}, k), h("td", {}, g.n),
          h("td", {}, fmt.pct(g.mape)), h("td", {}, fmt.pct(g.mean_signed_error)))))),
      Charts.scatter(f.rows.filter(r => r.predicted != null && r.measured != null).map(r => ({
        x: r.measured, y: r.predicted, label: `${r.id}: measured ${r.measured}, predicted ${r.predicted.toPrecision(4)}` })),
        { xLabel: "measured", yLabel: "predicted", diagonal: true, label: `predicted vs measured, ${name}` }));
  }
}

function goodputResult(job, root) {
  const r = job.result;
  root.append(h("div", { class: "metrics" },
    card("Goodput", fmt.pct(r.goodput_ratio)), card("Expected days", r.expected_days != null ? r.expected_days.toFixed(1) : "–", `ideal ${r.ideal_days != null ? r.ideal_days.toFixed(1) : "–"}`),
    card("p50 / p90 days", `${(r.p50_days || 0).toFixed(1)} / ${(r.p90_days || 0).toFixed(1)}`),
    card("Interruptions", fmt.n(r.interruptions, 1), `MTBF ${fmt.n((r.mtbf_s || 0) / 3600, 1)} h`),
    card("Checkpoint interval", fmt.s(r.checkpoint && r.checkpoint.interval_s), `Daly optimum ${fmt.s(r.checkpoint && r.checkpoint.daly_interval_s)}`)),
    h("h3", {}, "Time lost by cause"),
    h("table", {}, h("tbody", {}, Object.entries(r.by_cause || {}).map(([k, c]) =>
      h("tr", {}, h("td", {}, k), h("td", {}, c.category), h("td", {}, `${fmt.n(c.interruptions, 1)} interruptions`),
        h("td", {}, `${fmt.n(c.lost_s / 3600, 1)} h lost`))))));
}

function genericResult(job, root) {
  // a sweep's result is {varied, rows, warnings} (search.render.sweep_json); a bare list of rows too
  const r = job.result;
  const rows = Array.isArray(r) ? r : (r && Array.isArray(r.rows) ? r.rows : null);
  if (r && Array.isArray(r.warnings)) root.append(...r.warnings.map(w => h("p", { class: "note" }, `warning: ${w}`)));
  if (rows && rows.length && typeof rows[0] === "object") {
    const cols = Object.keys(rows[0]).filter(c => typeof rows[0][c] !== "object");
    root.append(h("table", {}, h("thead", {}, h("tr", {}, cols.map(c => h("th", {}, c)))),
      h("tbody", {}, rows.map(r => h("tr", {}, cols.map(c => h("td", {}, typeof r[c] === "number" ? r[c].toPrecision(4) : String(r[c]))))))));
  }
  root.append(h("pre", {}, JSON.stringify(job.result, null, 2).slice(0, 20000)));
}

function plotImage(id) {
  // the PNG needs the token, so it is fetched and shown from a blob
  const img = h("img", { alt: "plot", class: "plot" });
  fetch(`/api/v1/jobs/${id}/plot`, { headers: { Authorization: `Bearer ${token()}` } })
    .then(r => r.ok ? r.blob() : null).then(b => { if (b) img.src = URL.createObjectURL(b); });
  return img;
}

async function viewJob(id) {
  const seq = routeSeq;
  const r = await api("GET", `/jobs/${id}`);
  if (stale(seq)) return;
  if (r.status === 401) return needToken();
  if (!r.ok) return view().replaceChildren(errorBox(r.data.error || `HTTP ${r.status}`));
  const job = r.data;
  const root = h("section", { class: "card", id: "result" },
    h("h2", {}, `${job.kind} ${job.id.slice(0, 8)} — `, h("span", { class: `st-${job.status}`, id: "status" }, job.status)));
  if (job.status === "queued" || job.status === "running") {
    root.append(h("progress", { max: 1, value: job.progress, "aria-label": "progress" }),
      h("p", {}, job.phase || "waiting for a worker"),
      h("button", { onclick: async () => { await api("DELETE", `/jobs/${id}`); viewJob(id); } }, "Cancel"));
    pollTimer = setTimeout(() => viewJob(id), 700);
  } else if (job.status === "done") {
    ({ simulate: simulateResult, search: searchResult, validate: validateResult,
       goodput: goodputResult }[job.kind] || genericResult)(job, root);
    if (job.has_plot) root.append(h("h3", {}, "The CLI's plot"), plotImage(job.id));
  } else if (job.error) root.append(errorBox(job.error));
  view().replaceChildren(root);
}

async function viewCompare(ids) {
  const picked = (ids || "").split(",").filter(Boolean);
  const seq = routeSeq;
  if (picked.length < 2) {
    const r = await api("GET", "/jobs?limit=200");
    if (stale(seq)) return;
    if (r.status === 401) return needToken();
    const done = r.data.filter(j => j.kind === "simulate" && j.status === "done");
    return view().replaceChildren(h("section", { class: "card" }, h("h2", {}, "Compare runs"),
      h("p", {}, "Pick two or more finished simulations."),
      h("form", { onsubmit: e => { e.preventDefault(); location.hash = `#/compare/${[...document.querySelectorAll(".pick:checked")].map(c => c.value).join(",")}`; } },
        done.map(j => h("label", { class: "check" }, h("input", { type: "checkbox", class: "pick", value: j.id }),
          `${j.id.slice(0, 8)} (${new Date(j.created_at * 1000).toLocaleString()})`)),
        h("button", { type: "submit" }, "Compare"))));
  }
  const jobs = (await Promise.all(picked.map(id => api("GET", `/jobs/${id}`)))).filter(r => r.ok).map(r => r.data);
  if (stale(seq)) return;
  const label = j => { const c = j.result.config; return `${c.model.name} ${c.cluster.num_gpus}×${c.cluster.gpu.name} TP${c.parallel.tensor_model_parallel_size} PP${c.parallel.pipeline_model_parallel_size}`; };
  const rows = headline(jobs[0].result).map(([name], i) => h("tr", {}, h("th", {}, name),
    jobs.map(j => h("td", {}, headline(j.result)[i][1]))));
  view().replaceChildren(h("section", { class: "card" }, h("h2", {}, "Compare runs"),
    h("table", { class: "compare" }, h("thead", {}, h("tr", {}, h("th", {}, ""), jobs.map(j => h("th", {}, h("a", { href: `#/job/${j.id}` }, label(j)))))),
      h("tbody", {}, rows)),
    jobs.map(j => h("div", {}, h("h3", {}, label(j)), Charts.stacked(Object.entries(j.result.breakdown)
      .filter(([, v]) => v > 1e-12).map(([k, v]) => ({ label: k.replace(/_s$/, ""), value: v })), "s", "breakdown")))));
}

function simpleForm(title, fields, onsubmit, intro) {
  const form = h("form", { class: "grid", onsubmit: async e => { e.preventDefault(); await onsubmit(); } },
    fields.map(([id, label, value, type]) => h("label", {}, h("span", {}, label),
      type === "textarea" ? h("textarea", { id: `f-${id}`, rows: 14, spellcheck: "false" }, value)
        : Array.isArray(type) ? h("select", { id: `f-${id}` }, type.map(v => h("option", { value: v, selected: v === value }, v)))
        : h("input", { id: `f-${id}`, value, type: type || "text" }))),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Run")));
  view().replaceChildren(h("section", { class: "card" }, h("h2", {}, title), intro ? h("p", {}, intro) : null,
    form, h("div", { id: "form-error" })));
}

const val = id => $(`#f-${id}`).value.trim();

async function viewSearch() {
  const seq = routeSeq;
  let models;
  try { models = (await catalog("models")).map(m => m.name); } catch (e) { return stale(seq) || needToken(); }
  const gpus = (await catalog("gpus")).map(g => g.name);
  if (stale(seq)) return;
  simpleForm("Search parallel configurations", [
    ["model", "Model", "llama3-8b", models], ["gpu", "GPU", "h100-sxm-80gb", gpus],
    ["gpus", "GPU counts (comma-separated)", "8"], ["global_batch", "Global batch", "128", "number"],
    ["seq", "Sequence length", "8192", "number"], ["tp", "TP sizes (blank: all)", ""],
    ["pp", "PP sizes (blank: all)", ""], ["top", "Top", "10", "number"]],
  () => {
    // counts as typed: the server reads "8", "8.0" and "1e3" as a config does and refuses
    // anything else naming the option (+"" was 0, +"2,048" NaN sent as null; robust57)
    const options = { gpu: val("gpu"), gpus: val("gpus"), plot: true };
    for (const k of ["global_batch", "seq", "top", "tp", "pp"]) if (val(k)) options[k] = val(k);
    return submitJob("search", { model: val("model") }, options);
  }, "Ranks TP/PP/CP/DP splits, micro-batch, recompute and overlap settings; progress shows live.");
}

async function viewValidate() {
  const seq = routeSeq;
  const r = await api("GET", "/validation/files");
  if (stale(seq)) return;
  if (r.status === 401) return needToken();
  simpleForm("Validation against published measurements", [
    ["file", "Bundled file", "training_public.csv", r.data]],
  () => submitJob("validate", {}, { file: val("file"), plot: true }),
  "Predicts every row of a published file and reports the error per framework.");
}

const GOODPUT_YAML = `model: llama3-70b
parallel: {tp: 8, pp: 4, sequence_parallel: true, distributed_optimizer: true}
training: {global_batch_size: 1024, micro_batch_size: 1, seq_length: 8192, train_tokens: 2.0e12}
cluster: {node: dgx-h100, num_gpus: 1024}
reliability: {failures: llama3-405b-16k-h100}
`;

function viewGoodput() {
  simpleForm("Goodput of a whole run", [
    ["config", "Run config (YAML, with an optional reliability section)", GOODPUT_YAML, "textarea"],
    ["trials", "Monte Carlo trials", "1000", "number"], ["interval", "Checkpoint interval (blank: Daly's optimum)", ""]],
  () => {
    const options = { plot: true };  // counts as typed (viewSearch)
    if (val("trials")) options.trials = val("trials");
    if (val("interval")) options.interval = val("interval");
    return submitJob("goodput", val("config"), options);  // YAML text: the server reads it
  }, "Failures, checkpoints and restarts over the run (Monte Carlo).");
}

async function route() {
  clearTimeout(pollTimer);
  routeSeq += 1;
  const [, page, arg] = location.hash.replace(/^#\/?/, "#/").split("/");
  try {
    if (page === "new") await viewNew();
    else if (page === "job") await viewJob(arg);
    else if (page === "compare") await viewCompare(arg);
    else if (page === "search") await viewSearch();
    else if (page === "validate") await viewValidate();
    else if (page === "goodput") viewGoodput();
    else await viewRuns();
  } catch (e) {
    view().replaceChildren(errorBox(String(e)));
  }
}

$("#token-form").addEventListener("submit", e => {
  e.preventDefault();
  localStorage.setItem("trainsim-token", $("#token").value.trim());
  for (const k of Object.keys(catalogCache)) delete catalogCache[k];
  route();
});
$("#token").value = token();
window.addEventListener("hashchange", route);
route();
