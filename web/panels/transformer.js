// The Transformer panel: choose, upload or paste a text, pick a preset or set the config, see the
// parameter count and memory against the adapter's limits, Train / Pause / Stop with a live loss
// chart and tokens per second, then sample (streamed character by character) and download the
// weights as safetensors. Every finished run is posted to the server.
import { getHealth, getRecentRuns, getSnippet, getText, listTexts, uploadText } from "../api.js";
import { lineChart } from "../charts.js";
import { param } from "../kinds.js";
import { showComparisons } from "./compare.js";
import { adapterId, initial, sameAdapter, save } from "../state.js";
import { stoppedTransformerNote } from "../snippets.js";
import { el, filePicker, fmtBytes, fmtDuration, fmtNumber, fmtSeconds, leftText, progressBar, setProgress, snippetBox } from "../ui.js";

// Steps on a software adapter or the CPU path, where the "tiny" model takes seconds a step.
const SMALL_STEPS = 20;
// Characters sampled at each validation while training (the live sample): a line or so, and a
// few words where a character costs a fifth of a second or more (a software adapter, the CPU path).
const LIVE_SAMPLE = { fast: 60, slow: 10 };
// Rough rates by adapter class, for when no run on this adapter is stored. A step takes
// `layer` seconds a layer whatever its size (its ~36 dispatches: what dominates small models
// on a software adapter) plus `step` seconds a unit of work (a million parameters at batch 32,
// context 64); a validation batch takes `evalBatch` of a step; a sampled character `char`
// seconds a million parameters; the set-up (weights, plans) `setup` seconds. Measured:
// - software: SwiftShader on 2 cores (`python -m bench.estimates`), tiny at batch 2, 4, 8 and
//   12: 1.0-1.9, 2.8-3.4, 3.4-4.0 and 5.1-5.4 s a step (least squares: 0.31 s a layer, 13.1 a
//   unit), validation batches 0.26-0.40 of a step, 0.17-0.32 s a character;
// - CPU (the tab's Python path): tiny at batch 4 took 21.5 s a step in CPython, and micro took
//   2.2x its CPython time in Pyodide under Node: about 47 s a step in a tab;
// - GPU: the H200 ran tiny in 4.4 ms and shakespeare_char in 55.6 ms a step, about 1 ms a layer
//   and 0.6 ms a unit (bench/results/2026-11-24-h200.md); a laptop's GPU is taken as 2x slower
//   a layer and 5x a unit.
const CLASS_RATES = {
  gpu: { layer: 0.002, step: 0.003, evalBatch: 0.3, char: 0.005, setup: 1 },
  software: { layer: 0.31, step: 13.1, evalBatch: 0.4, char: 0.25, setup: 2 },
  cpu: { layer: 0.08, step: 465, evalBatch: 0.34, char: 5, setup: 1.5 },
};
// An estimate past this many seconds is warned about before Train (py_core.jobs.estimate.MINUTES).
const MINUTES = 60;
// This browser's last transformer run on an adapter (its config, timings and size), the tab's own
// rates across reloads; the server's recent runs are the fallback.
const ratesKey = (info) => `playground.transformer-rates:${adapterId(info)}`;
function measured(info) {
  try {
    const run = JSON.parse(localStorage.getItem(ratesKey(info)) || "null");
    return run?.timings?.step > 0 && run.metrics?.n_params > 0 ? run : null;
  } catch (e) { return null; }
}
function remember(run) {
  const info = { backend: run.backend, adapter: run.adapter };
  localStorage.setItem(ratesKey(info), JSON.stringify({ config: { params: run.config?.params }, timings: run.timings,
                                                        metrics: { n_params: run.metrics.n_params } }));
}
// What is wrong with a field's text, in the words of its label, or null (empty: the preset's
// value); TransformerConfig.validate's rules. bad: not a number; heads: the heads asked for.
export function fieldProblem(k, raw, { bad = false, heads = 0 } = {}) {
  const label = FIELDS.find(([name]) => name === k)[1];
  if (bad) return `${label}: type a number.`;
  if (raw === "") return null;
  const v = Number(raw);
  if (k === "lr") return Number.isFinite(v) && v > 0 ? null : "Learning rate: a number above 0, such as 0.001.";
  if (!/^\d+$/.test(raw)) return `${label}: a whole number${k === "seed" ? "" : ", 1 or more"}.`;
  if (k === "seed") return v < 2 ** 32 ? null : "Seed: a whole number below 4,294,967,296.";
  if (v < 1) return `${label}: 1 or more.`;
  if (k === "n_embd" && heads >= 1 && v % heads) return `Embedding width: a multiple of the heads (${heads}), such as ${Math.ceil(v / heads) * heads}.`;
  return null;
}

// Validations in a run of `steps`: at every `every` steps and at the end.
const validations = (steps, every) => Math.floor(steps / every) + (steps % every ? 1 : 0);
// The weights in PyTorch: nanoGPT's parameter names and GPTConfig (server/snippets.py).
const SNIPPET_SUMMARY = "Use the weights elsewhere (PyTorch, nanoGPT's model.py)";
const NO_RUN_YET = `# Train a model: its weights download as safetensors with nanoGPT's parameter names and
# GPTConfig, and the Python that loads them into nanoGPT's GPT appears here.`;

// The form's fields, labelled as the transformer's table labels them (GET /api/kinds). The
// validation loss: estimated every eval_interval steps and at the end, over eval_steps batches
// (nanoGPT's eval_interval and eval_iters); the estimate of Train's time counts them.
const FIELDS = ["n_layer", "n_head", "n_embd", "block_size", "batch_size", "steps", "lr", "seed",
  "eval_interval", "eval_steps"].map((k) => [k, param("transformer", k).label]);

export function mountTransformerPanel(root, playground) {
  const textSelect = el("select", { id: "text-select", "aria-label": "Text" });
  const textFile = el("input", { type: "file", accept: ".txt,text/plain", id: "text-file", "aria-label": "Text file" });
  const textStatus = el("div", { class: "status", role: "status", "aria-live": "polite" });
  const textPreview = el("pre", { class: "preview", id: "text-preview" });
  // A pasted text is uploaded as a file would be: the server checks and bounds it the same way.
  const pasteArea = el("textarea", { id: "text-paste", rows: 6, "aria-label": "Text to train on",
                                     placeholder: "Paste a text here: a few thousand characters or more train best." });
  const pasteName = el("input", { type: "text", id: "text-paste-name", value: "pasted text", maxlength: 200, "aria-label": "Name of the pasted text" });
  const pasteUse = el("button", { type: "button", class: "secondary", id: "text-paste-use" }, "Use this text");
  const pasteBox = el("details", { id: "text-paste-box" }, el("summary", {}, "Or paste a text"), pasteArea,
    el("div", { class: "row" }, el("label", {}, "Name ", pasteName), pasteUse));
  const preset = el("select", { id: "tf-preset" });
  const estimate = el("p", { class: "estimate", id: "tf-estimate" });
  const inputs = Object.fromEntries(FIELDS.map(([k]) => [k, el("input", { type: "number", id: `tf-${k}`, step: "any",
                                                                          "aria-describedby": `tf-${k}-problem` })]));
  const problems = Object.fromEntries(FIELDS.map(([k]) => [k, el("span", { class: "field-problem", id: `tf-${k}-problem` })]));
  const size = el("div", { class: "muted", id: "tf-size" });
  // Precision: f32 (the default, parity with PyTorch f32) or mixed (matmuls on tensor cores)
  const precision = el("select", { id: "tf-precision" },
    el("option", { value: "f32" }, "f32"), el("option", { value: "mixed" }, "mixed: f16 on tensor cores"));
  const precisionNote = el("p", { class: "muted", id: "tf-precision-note", role: "status" });
  const train = el("button", { class: "primary", id: "tf-train" }, "Train");
  const pauseBtn = el("button", { class: "secondary", id: "tf-pause", disabled: true }, "Pause");
  const stopBtn = el("button", { class: "secondary", id: "tf-stop", disabled: true }, "Stop");
  const bar = progressBar("Training progress");
  const status = el("div", { class: "status", id: "tf-status", role: "status", "aria-live": "polite" });
  const chart = el("div", { id: "tf-chart" });
  const prompt = el("input", { type: "text", id: "tf-prompt", placeholder: "Prompt (optional)", size: 30, "aria-label": "Prompt" });
  const length = el("input", { type: "number", id: "tf-length", value: 300, class: "short" });
  const temperature = el("input", { type: "number", id: "tf-temperature", value: 0.8, step: "0.1", class: "short" });
  const topk = el("input", { type: "number", id: "tf-topk", value: 40, class: "short" });
  const sampleBtn = el("button", { class: "secondary", id: "tf-sample", disabled: true }, "Sample");
  const download = el("button", { class: "secondary", id: "tf-download", disabled: true }, "Download weights (safetensors)");
  const output = el("pre", { class: "sample", id: "tf-output", tabindex: "0" });
  // The weights' file name, and the server's PyTorch snippet for them, follow the stored run.
  let weightsName = "transformer.safetensors";
  const snippetHolder = el("div", { id: "tf-snippet-holder" }, snippetBox("tf-snippet", SNIPPET_SUMMARY, NO_RUN_YET));
  const showSnippet = (text) => snippetHolder.replaceChildren(snippetBox("tf-snippet", SNIPPET_SUMMARY, text));

  const compare = el("div", { id: "tf-compare" });
  root.append(el("div", { class: "cards" },
    el("div", { class: "card" }, el("h2", {}, "Text"), el("div", { class: "row" }, textSelect,
      filePicker(textFile, "Upload a text…", { id: "text-choose" })), pasteBox, textStatus, textPreview),
    el("div", { class: "card" }, el("h2", {}, "Model"), el("div", { class: "row" }, el("label", {}, "Preset ", preset)),
      el("div", { class: "form" }, FIELDS.map(([k, label]) => el("label", { class: "field" }, label, inputs[k], problems[k]))),
      el("div", { class: "row" }, el("label", {}, "Precision ", precision)), precisionNote,
      size, estimate, el("div", { class: "row" }, train, pauseBtn, stopBtn), bar, status)),
  el("div", { class: "cards", id: "transformer-plots" },
    el("div", { class: "card" }, el("h2", {}, "Loss"), chart),
    el("div", { class: "card" }, el("h2", {}, "Sample"),
      el("div", { class: "row" }, prompt, el("label", {}, "chars ", length), el("label", {}, "temperature ", temperature),
        el("label", {}, "top-k ", topk), sampleBtn, download), output, snippetHolder)),
  el("h2", { class: "section-note" }, "The same job on the server"), compare);

  const sampleNote = el("p", { class: "muted", id: "tf-sample-note", role: "status" },
    "While the model trains, a sample appears here at each validation; after training, Sample writes more.");
  output.before(sampleNote);

  let presets = {};
  let vocabSize = 65;
  let curve = [], valCurve = [];
  let lossChart = null;
  let restoring = true;     // the URL's choices are applied once, when presets and texts arrive
  let sizedDown = false;
  let pastRuns = null;
  let lastSize = null;

  function params() {
    const p = { preset: preset.value };
    for (const [k] of FIELDS) if (inputs[k].value !== "") p[k] = Number(inputs[k].value);
    if (precision.value === "mixed") p.precision = "mixed";
    return p;
  }

  // Each field's problem under it, as it is typed; true when there is none.
  function checkFields() {
    const values = Object.fromEntries(FIELDS.map(([k]) => [k, inputs[k].value.trim()]));
    let ok = true;
    for (const [k] of FIELDS) {
      const problem = fieldProblem(k, values[k], { bad: inputs[k].validity.badInput, heads: Number(values.n_head) });
      problems[k].textContent = problem || "";
      inputs[k].setAttribute("aria-invalid", problem ? "true" : "false");
      ok &&= !problem;
    }
    return ok;
  }

  async function updateSize() {
    if (!checkFields()) { train.disabled = true; return; }
    const info = await playground.call("transformer_size", [JSON.stringify(params()), vocabSize]);
    if (info.error) { size.textContent = info.error.message; size.className = "status error"; train.disabled = true; return; }
    lastSize = info;
    updateEstimate();
    size.className = info.fits ? "muted" : "status error";
    size.textContent = `${fmtNumber(info.n_params / 1e6, 3)} M parameters · needs ${fmtBytes(info.total)} of GPU memory ` +
      `(largest buffer ${fmtBytes(info.largest_buffer)}, this adapter binds up to ${fmtBytes(info.binding_limit)})` +
      (info.fits ? "" : ": too large for this adapter");
    train.disabled = !info.fits || !checkFields();   // a field typed into meanwhile may be wrong
    if (info.fits) warmAhead();
  }

  // While this tab shows a config, its kernels compile in the worker (py_core.browser.warm):
  // the run then starts on compiled pipelines rather than compiling them on the click.
  let warmed = null;
  function warmAhead() {
    if (!root.classList.contains("active") || restoring) return;
    const key = JSON.stringify([params(), vocabSize]);
    if (key === warmed) return;
    warmed = key;
    playground.warm("transformer", params(), vocabSize);
  }
  playground.events.addEventListener("tab", (ev) => { if (ev.detail === "transformer" && lastSize?.fits) warmAhead(); });

  function applyPreset() {
    const p = presets[preset.value];
    for (const [k] of FIELDS) inputs[k].value = p[k] ?? (k === "seed" ? 0 : "");
    sizedDown = false;
    if (slow() && !restoring && Number(inputs.steps.value) > SMALL_STEPS) {
      inputs.steps.value = SMALL_STEPS;
      sizedDown = true;
    }
    saveParams();
    updateSize();
  }

  const slow = () => playground.isSoftware() || playground.info?.backend !== "webgpu";

  function saveParams() {
    if (restoring) return;
    const p = presets[preset.value] || {};
    const values = {};
    if (textSelect.value && textSelect.value !== "shakespeare") values["tf.text"] = textSelect.value;
    if (preset.value !== "tiny") values["tf.preset"] = preset.value;
    if (precision.value !== "f32") values["tf.precision"] = precision.value;
    for (const [k] of FIELDS) {
      const dflt = String(p[k] ?? (k === "seed" ? 0 : ""));
      if (inputs[k].value !== dflt && !(k === "steps" && sizedDown)) values[`tf.${k}`] = inputs[k].value;
    }
    save(values, "tf.");
  }

  // The time Train will take: the steps, the validations (eval_steps forward batches at every
  // eval_interval steps and at the end), the live sample after each, and the set-up (weights,
  // kernels compiled once a tab). Rates from the last transformer run on this adapter, scaled by
  // the model's size; else rough figures for the adapter's class.
  async function updateEstimate() {
    const info = playground.info;
    if (!info || !lastSize?.n_params) return;
    const p = { ...(presets[preset.value] || {}), ...params() };
    const steps = p.steps || 0;
    if (pastRuns === null) {
      pastRuns = [];
      try { pastRuns = await getRecentRuns("transformer", 10); } catch (e) { /* none */ }
    }
    const cls = info.backend !== "webgpu" ? "cpu" : playground.isSoftware() ? "software" : "gpu";
    const work = (n, c) => (n / 1e6) * ((c.batch_size || 32) / 32) * ((c.block_size || 64) / 64);
    // This tab's own last run on this adapter (kept across reloads), else the server's.
    const same = measured(info) || pastRuns.find((r) => sameAdapter(r, info) && r.timings?.step > 0 && r.metrics?.n_params);
    const rates = same ? pastRates(same, work, CLASS_RATES[cls]) : CLASS_RATES[cls];
    const perStep = (p.n_layer || 1) * rates.layer + rates.step * work(lastSize.n_params, p);
    const evals = steps > 0 ? validations(steps, p.eval_interval || steps) : 0;
    const live = LIVE_SAMPLE[slow() ? "slow" : "fast"];
    const perChar = rates.char * (lastSize.n_params / 1e6);
    const seconds = steps * perStep + evals * (p.eval_steps || 0) * perStep * rates.evalBatch
      + evals * live * perChar + rates.setup;
    const basis = same ? `from your last run on this adapter (${fmtSeconds(same.timings.step)} a step)`
      : `a rough figure for a ${cls === "gpu" ? "GPU" : cls === "software" ? "software adapter" : "CPU"}; it improves after one run`;
    estimate.dataset.seconds = String(seconds);
    estimate.className = seconds > MINUTES ? "estimate warn" : "estimate";
    estimate.textContent = `Estimated time: ${fmtDuration(seconds)} for ${steps} steps (${basis}).` +
      (seconds > MINUTES ? " That is minutes: fewer steps, a smaller batch or model would be quicker." : "") +
      (sizedDown ? ` Steps sized down to ${SMALL_STEPS} for this adapter.` : "");
  }

  // A stored run's rates: its step less the class's time a layer, per unit of work (at least
  // a fifth of its step); a validation batch against a step; seconds a sampled character per
  // million parameters; its set-up.
  function pastRates(run, work, cls) {
    const c = run.config?.params || {};
    const cfg = { ...(presets[c.preset] || {}), ...c };
    const t = run.timings, n = run.metrics.n_params;
    const evals = validations(cfg.steps || 0, cfg.eval_interval || cfg.steps || 1);
    const batches = evals * (cfg.eval_steps || 0);
    const liveChars = evals * (cfg.live_sample || 0);
    const charS = liveChars && t.live_sample ? t.live_sample / liveChars
      : t.sample_chars_per_s ? 1 / t.sample_chars_per_s : null;
    const layers = Math.min((cfg.n_layer || 1) * cls.layer, 0.8 * t.step);
    return {
      layer: layers / (cfg.n_layer || 1),
      step: (t.step - layers) / work(n, cfg),
      evalBatch: batches && t.eval ? t.eval / (batches * t.step) : cls.evalBatch,
      char: charS ? charS / (n / 1e6) : cls.char,
      setup: t.setup ?? 0,
    };
  }

  let textAsked = 0;  // the latest choice wins: an earlier, slower answer must not overwrite it
  async function chooseText() {
    saveParams();
    const asked = ++textAsked;
    try {
      const t = await getText(textSelect.value);
      if (asked !== textAsked) return;
      vocabSize = t.vocab_size;
      textPreview.textContent = t.preview;
      textStatus.textContent = `${t.chars.toLocaleString()} characters, ${t.vocab_size} distinct`;
      textStatus.className = "status";
      updateSize();
    } catch (e) {
      if (asked === textAsked) { textStatus.textContent = e.message; textStatus.className = "status error"; }
    }
  }

  async function refreshTexts(selected) {
    const { texts } = await listTexts();
    textSelect.replaceChildren(...texts.map((t) => el("option", { value: t.id }, `${t.name} (${t.chars.toLocaleString()} chars)`)));
    if (selected) textSelect.value = selected;
    if (!textSelect.value && textSelect.options.length) textSelect.value = textSelect.options[0].value;
    await chooseText();
  }

  function draw(series = [{ name: "train", points: curve }, ...(valCurve.length ? [{ name: "validation", points: valCurve }] : [])]) {
    if (!lossChart) lossChart = lineChart(chart, series, { title: "Loss by step", xName: "step", yName: "loss", integerX: true });
    else lossChart.update(series);
  }

  train.addEventListener("click", async () => {
    const live = LIVE_SAMPLE[slow() ? "slow" : "fast"];
    const job = { kind: "transformer", text: textSelect.value, params: { ...params(), sample_chars: 0, live_sample: live } };
    curve = []; valCurve = []; at = null;
    train.disabled = true; pauseBtn.disabled = false; stopBtn.disabled = false; sampleBtn.disabled = true;
    status.className = "status"; status.textContent = "Starting…";
    try {
      const run = await playground.run(job, { onProgress: (p) => {
        setProgress(bar, p.fraction, p.stage);
        // Every step's loss, in the batches the GPU has finished (a few a second).
        if (p.losses) curve.push(...p.losses[1].map((v, i) => [p.losses[0] + i, v]));
        else if (p.loss !== undefined) curve.push([p.step, p.loss]);
        if (p.val_loss !== undefined && p.val_loss !== null && valCurve.at(-1)?.[1] !== p.val_loss) valCurve.push([p.step, p.val_loss]);
        if (curve.length) draw();
        if (p.sample !== undefined) {  // at each validation: the model as it stands
          sampleNote.textContent = `Sampled at step ${p.step} of ${p.steps}, while training:`;
          output.textContent = p.sample;
        }
        if (p.step !== undefined) at = [p.step, p.steps];
        if (paused) { status.textContent = pausedText(); return; }
        status.textContent = `${p.stage}` + (p.step !== undefined ? ` · step ${p.step}${p.steps ? ` of ${p.steps}` : ""}` : "") +
          (p.loss !== undefined ? ` · loss ${fmtNumber(p.loss, 4)}` : "") +
          (p.tokens_per_s ? ` · ${Math.round(p.tokens_per_s).toLocaleString()} tokens/s` : "") +
          leftText(p.eta_s);
      } });
      curve = run.metrics.loss_curve; valCurve = run.metrics.val_curve || [];
      draw();
      const t = run.timings;
      status.textContent = `Done: validation loss ${fmtNumber(run.metrics.val_loss, 4)}, ${fmtSeconds(t.step)} a step, ` +
        `${Math.round(t.tokens_per_s).toLocaleString()} tokens/s on ${run.backend === "webgpu" ? `WebGPU (${run.adapter.vendor})` : "the CPU"}. Stored as run ${run.id.slice(0, 8)}.`;
      sampleBtn.disabled = false; download.disabled = false;
      weightsName = `transformer-${run.id.slice(0, 8)}.safetensors`;
      showSnippet(getSnippet(run.id));
      showComparisons(compare, run);
      remember(run);
      pastRuns = null;  // the next estimate starts from this run's rates
      updateEstimate();
      // The PyTorch twin's loss curve, laid over the browser's once it is in.
      const twin = setInterval(async () => {
        const res = await fetch(`/api/runs/${run.id}/comparisons`).catch(() => null);
        const torch = res?.ok ? (await res.json()).comparisons.find((c) => c.runner === "torch") : null;
        if (!torch || ["failed", "unavailable"].includes(torch.status)) { if (torch) clearInterval(twin); return; }
        if (torch.status === "done") {
          clearInterval(twin);
          draw([{ name: "browser", points: curve }, { name: `PyTorch (${torch.device})`, points: torch.metrics.loss_curve || [] }]);
        }
      }, 3000);
    } catch (e) {
      status.className = e.stopped ? "status" : "status error";
      // A stopped run keeps its model as trained so far: it can be sampled and saved (not posted).
      // The whole line: it holds numbers with points ("0.1 MiB on the GPU").
      const kept = e.stopped && /stopped at step \d+ of \d+[^\n]*/.exec(e.detail || "");
      status.textContent = kept ? `Stopped ${kept[0].replace(/^stopped/, "").trim().replace(/\.?$/, ".")} Nothing was posted.`
        : e.stopped ? "Stopped: nothing was posted." : `Training failed: ${e.message}`;
      if (kept) {
        sampleBtn.disabled = false; download.disabled = false;
        weightsName = "transformer-stopped.safetensors";
        showSnippet(stoppedTransformerNote(weightsName));
      }
    } finally {
      train.disabled = false; pauseBtn.disabled = true; stopBtn.disabled = true; pauseBtn.textContent = "Pause";
      paused = false;
    }
  });
  let paused = false;   // progress already on its way says "Paused", not the stage it reports
  let at = null;        // [step, steps] of the last progress
  const pausedText = () => (at ? `Paused at step ${at[0]}${at[1] ? ` of ${at[1]}` : ""}.` : "Paused.");
  pauseBtn.addEventListener("click", () => {
    const pausing = pauseBtn.textContent === "Pause";
    paused = pausing;
    playground.pause(pausing);
    pauseBtn.textContent = pausing ? "Resume" : "Pause";
    status.textContent = pausing ? pausedText() : "Resuming…";
  });
  stopBtn.addEventListener("click", () => { playground.stop(); status.textContent = "Stopping…"; });

  sampleBtn.addEventListener("click", async () => {
    // The note says "Sampling…" until the last character is in and the button is back.
    sampleBtn.disabled = true;
    sampleNote.textContent = "Sampling from the trained model…";
    output.textContent = prompt.value;
    let done = "Sampled from the trained model:";
    try {
      await playground.call("sample_text", [prompt.value, Number(length.value), Number(temperature.value),
        Number(topk.value), Math.floor(Math.random() * 2 ** 31)], {
        onProgress: (p) => { if (p.char !== undefined) output.textContent += p.char; } });
    } catch (e) {
      output.textContent += `\n[${e.message}]`;
      done = "Sampling failed (what came before the error, then its message):";
    }
    sampleBtn.disabled = false;
    sampleNote.textContent = done;
  });
  download.addEventListener("click", async () => {
    const { safetensors } = await playground.call("export_transformer");
    const bytes = Uint8Array.from(atob(safetensors), (c) => c.charCodeAt(0));
    el("a", { href: URL.createObjectURL(new Blob([bytes])), download: weightsName }).click();
  });
  textSelect.addEventListener("change", chooseText);
  preset.addEventListener("change", applyPreset);
  for (const i of Object.values(inputs)) {
    i.addEventListener("change", () => { sizedDown = false; saveParams(); updateSize(); });
    i.addEventListener("input", () => { if (!checkFields()) train.disabled = true; });
  }
  async function useText(file, name) {
    textStatus.className = "status"; textStatus.textContent = `Uploading ${name}…`;
    try { const t = await uploadText(file, { name }); await refreshTexts(t.id); return true; }
    catch (e) { textStatus.className = "status error"; textStatus.textContent = e.message; return false; }
  }
  textFile.addEventListener("change", () => {
    const file = textFile.files[0];
    textFile.value = "";   // the same (edited) file chosen again is a change again
    if (file) useText(file, file.name);
  });
  pasteUse.addEventListener("click", async () => {
    const text = pasteArea.value, name = pasteName.value.trim() || "pasted text";
    const bytes = new TextEncoder().encode(text).length;
    const capMb = (await getHealth().catch(() => null))?.limits?.max_upload_mb;
    const refuse = (why) => { textStatus.className = "status error"; textStatus.textContent = why; pasteArea.focus(); };
    if (text.trim().length < 2) return refuse("Paste a text first: the box is empty.");
    if (capMb && bytes > capMb * 2 ** 20) {
      return refuse(`The pasted text is ${(bytes / 2 ** 20).toFixed(1)} MB: larger than this server's ${capMb} MB limit (playground --max-upload-mb).`);
    }
    pasteUse.disabled = true;
    try { await useText(new File([text], `${name}.txt`, { type: "text/plain" }), name); } finally { pasteUse.disabled = false; }
  });

  // Which path a run takes here, and why: the mixed path needs f16 subgroup matrices.
  function showPrecision() {
    const tc = playground.info?.backend === "webgpu" ? playground.info.adapter?.tensor_cores : null;
    const mixedOption = precision.options[1];
    mixedOption.disabled = !tc?.available;
    if (!tc?.available && precision.value === "mixed") precision.value = "f32";
    const why = tc ? tc.why : "the page runs on the CPU here";
    precisionNote.textContent = precision.value === "mixed"
      ? `Runs mixed precision: matmuls with f16 operands on tensor cores (${why}), f32 accumulation, ` +
        "f32 master weights, LayerNorm, softmax and loss, loss scale 1024."
      : `Runs f32 everywhere (the default: parity with PyTorch f32). Mixed precision ` +
        (tc?.available ? `is available: ${why}.` : `is not available: ${why}.`);
  }
  precision.addEventListener("change", () => { showPrecision(); saveParams(); warmAhead(); });

  playground.ready.then(async () => {
    if (initial("tf.precision") === "mixed") precision.value = "mixed";
    showPrecision();
    presets = await playground.call("transformer_presets");
    preset.replaceChildren(...Object.keys(presets).map((k) => el("option", { value: k }, k)));
    preset.value = presets[initial("tf.preset")] ? initial("tf.preset") : "tiny";
    applyPreset();
    let asked = false;
    for (const [k] of FIELDS) if (initial(`tf.${k}`) !== null) { inputs[k].value = initial(`tf.${k}`); asked = true; }
    if (!asked && slow() && Number(inputs.steps.value) > SMALL_STEPS) { inputs.steps.value = SMALL_STEPS; sizedDown = true; }
    await refreshTexts(initial("tf.text") || "shakespeare");
    restoring = false;
    saveParams();
    updateSize();
  }).catch((e) => { status.textContent = e.message; status.className = "status error"; });
}
export { mountTransformerPanel as mount };  // what the page calls for the transformer kind (its Kind.panel)
