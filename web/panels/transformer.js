// The Transformer panel: choose or upload a text, pick a preset or set the config, see the
// parameter count and memory against the adapter's limits, Train / Pause / Stop with a live loss
// chart and tokens per second, then sample (streamed character by character) and download the
// weights as safetensors. Every finished run is posted to the server.
import { getText, listTexts, uploadText } from "../api.js";
import { lines } from "../charts.js";
import { showComparisons } from "./compare.js";
import { el, fmtBytes, fmtNumber, fmtSeconds } from "../ui.js";

const FIELDS = [["n_layer", "Layers"], ["n_head", "Heads"], ["n_embd", "Embedding width"],
  ["block_size", "Context (characters)"], ["batch_size", "Batch"], ["steps", "Steps"],
  ["lr", "Learning rate"], ["seed", "Seed"]];

export function mountTransformerPanel(root, playground) {
  const textSelect = el("select", { id: "text-select", "aria-label": "Text" });
  const textFile = el("input", { type: "file", accept: ".txt,text/plain", id: "text-file" });
  const textStatus = el("div", { class: "status" });
  const textPreview = el("pre", { class: "preview", id: "text-preview" });
  const preset = el("select", { id: "tf-preset" });
  const inputs = Object.fromEntries(FIELDS.map(([k]) => [k, el("input", { type: "number", id: `tf-${k}`, step: "any" })]));
  const size = el("div", { class: "muted", id: "tf-size" });
  const train = el("button", { class: "primary", id: "tf-train" }, "Train");
  const pauseBtn = el("button", { class: "secondary", id: "tf-pause", disabled: true }, "Pause");
  const stopBtn = el("button", { class: "secondary", id: "tf-stop", disabled: true }, "Stop");
  const bar = el("div", { class: "bar wide" }, el("div", { class: "fill" }));
  const status = el("div", { class: "status", id: "tf-status" });
  const chart = el("canvas", { class: "chart", id: "tf-chart" });
  const prompt = el("input", { type: "text", id: "tf-prompt", placeholder: "Prompt (optional)", size: 30 });
  const length = el("input", { type: "number", id: "tf-length", value: 300, class: "short" });
  const temperature = el("input", { type: "number", id: "tf-temperature", value: 0.8, step: "0.1", class: "short" });
  const topk = el("input", { type: "number", id: "tf-topk", value: 40, class: "short" });
  const sampleBtn = el("button", { class: "secondary", id: "tf-sample", disabled: true }, "Sample");
  const download = el("button", { class: "secondary", id: "tf-download", disabled: true }, "Download weights (safetensors)");
  const output = el("pre", { class: "sample", id: "tf-output" });

  const compare = el("div", { id: "tf-compare" });
  root.append(el("div", { class: "cards" },
    el("div", { class: "card" }, el("h2", {}, "Text"), el("div", { class: "row" }, textSelect,
      el("label", { class: "secondary link" }, "Upload a text…", textFile)), textStatus, textPreview),
    el("div", { class: "card" }, el("h2", {}, "Model"), el("div", { class: "row" }, el("label", {}, "Preset ", preset)),
      el("div", { class: "form" }, FIELDS.map(([k, label]) => el("label", { class: "field" }, label, inputs[k]))),
      size, el("div", { class: "row" }, train, pauseBtn, stopBtn), bar, status)),
  el("div", { class: "cards", id: "transformer-plots" },
    el("div", { class: "card" }, el("h2", {}, "Loss"), chart),
    el("div", { class: "card" }, el("h2", {}, "Sample"),
      el("div", { class: "row" }, prompt, el("label", {}, "chars ", length), el("label", {}, "temperature ", temperature),
        el("label", {}, "top-k ", topk), sampleBtn, download), output)), compare);

  let presets = {};
  let vocabSize = 65;
  let curve = [], valCurve = [];

  function params() {
    const p = { preset: preset.value };
    for (const [k] of FIELDS) if (inputs[k].value !== "") p[k] = Number(inputs[k].value);
    return p;
  }

  async function updateSize() {
    const info = await playground.call("transformer_size", [JSON.stringify(params()), vocabSize]);
    if (info.error) { size.textContent = info.error; size.className = "status error"; train.disabled = true; return; }
    size.className = info.fits ? "muted" : "status error";
    size.textContent = `${fmtNumber(info.n_params / 1e6, 3)} M parameters · needs ${fmtBytes(info.total)} of GPU memory ` +
      `(largest buffer ${fmtBytes(info.largest_buffer)}, this adapter binds up to ${fmtBytes(info.binding_limit)})` +
      (info.fits ? "" : ": too large for this adapter");
    train.disabled = !info.fits;
  }

  function applyPreset() {
    const p = presets[preset.value];
    for (const [k] of FIELDS) inputs[k].value = p[k] ?? (k === "seed" ? 0 : "");
    updateSize();
  }

  async function chooseText() {
    try {
      const t = await getText(textSelect.value);
      vocabSize = t.vocab_size;
      textPreview.textContent = t.preview;
      textStatus.textContent = `${t.chars.toLocaleString()} characters, ${t.vocab_size} distinct`;
      textStatus.className = "status";
      updateSize();
    } catch (e) { textStatus.textContent = e.message; textStatus.className = "status error"; }
  }

  async function refreshTexts(selected) {
    const { texts } = await listTexts();
    textSelect.replaceChildren(...texts.map((t) => el("option", { value: t.id }, `${t.name} (${t.chars.toLocaleString()} chars)`)));
    if (selected) textSelect.value = selected;
    await chooseText();
  }

  function draw() {
    lines(chart, [{ name: "train", points: curve }, ...(valCurve.length ? [{ name: "validation", points: valCurve }] : [])],
      { xName: "step", yName: "loss" });
  }

  train.addEventListener("click", async () => {
    const job = { kind: "transformer", text: textSelect.value, params: { ...params(), sample_chars: 0 } };
    curve = []; valCurve = [];
    train.disabled = true; pauseBtn.disabled = false; stopBtn.disabled = false; sampleBtn.disabled = true;
    status.className = "status"; status.textContent = "Starting…";
    try {
      const run = await playground.run(job, { onProgress: (p) => {
        bar.firstChild.style.width = `${Math.round((p.fraction ?? 0) * 100)}%`;
        if (p.loss !== undefined) curve.push([p.step, p.loss]);
        if (p.val_loss !== undefined && p.val_loss !== null) valCurve.push([p.step, p.val_loss]);
        if (curve.length) draw();
        status.textContent = `${p.stage}` + (p.step !== undefined ? ` · step ${p.step}` : "") +
          (p.loss !== undefined ? ` · loss ${fmtNumber(p.loss, 4)}` : "") +
          (p.tokens_per_s ? ` · ${Math.round(p.tokens_per_s).toLocaleString()} tokens/s` : "");
      } });
      curve = run.metrics.loss_curve; valCurve = run.metrics.val_curve || [];
      draw();
      const t = run.timings;
      status.textContent = `Done: validation loss ${fmtNumber(run.metrics.val_loss, 4)}, ${fmtSeconds(t.step)} a step, ` +
        `${Math.round(t.tokens_per_s).toLocaleString()} tokens/s on ${run.backend === "webgpu" ? `WebGPU (${run.adapter.vendor})` : "the CPU"}. Stored as run ${run.id.slice(0, 8)}.`;
      sampleBtn.disabled = false; download.disabled = false;
      showComparisons(compare, run);
      // The PyTorch twin's loss curve, laid over the browser's once it is in.
      const twin = setInterval(async () => {
        const res = await fetch(`/api/runs/${run.id}/comparisons`).catch(() => null);
        const torch = res?.ok ? (await res.json()).comparisons.find((c) => c.runner === "torch") : null;
        if (!torch || ["failed", "unavailable"].includes(torch.status)) { if (torch) clearInterval(twin); return; }
        if (torch.status === "done") {
          clearInterval(twin);
          lines(chart, [{ name: "browser", points: curve }, { name: `PyTorch (${torch.device})`, points: torch.metrics.loss_curve || [] }],
            { xName: "step", yName: "training loss" });
        }
      }, 3000);
    } catch (e) {
      status.className = e.stopped ? "status" : "status error";
      status.textContent = e.stopped ? "Stopped: nothing was posted." : `Training failed: ${e.message}`;
    } finally {
      train.disabled = false; pauseBtn.disabled = true; stopBtn.disabled = true; pauseBtn.textContent = "Pause";
    }
  });
  pauseBtn.addEventListener("click", () => {
    const pausing = pauseBtn.textContent === "Pause";
    playground.pause(pausing);
    pauseBtn.textContent = pausing ? "Resume" : "Pause";
    status.textContent = pausing ? "Paused." : "Resuming…";
  });
  stopBtn.addEventListener("click", () => { playground.stop(); status.textContent = "Stopping…"; });

  sampleBtn.addEventListener("click", async () => {
    sampleBtn.disabled = true;
    output.textContent = prompt.value;
    try {
      await playground.call("sample_text", [prompt.value, Number(length.value), Number(temperature.value),
        Number(topk.value), Math.floor(Math.random() * 2 ** 31)], {
        onProgress: (p) => { if (p.char !== undefined) output.textContent += p.char; } });
    } catch (e) { output.textContent += `\n[${e.message}]`; }
    sampleBtn.disabled = false;
  });
  download.addEventListener("click", async () => {
    const { safetensors } = await playground.call("export_transformer");
    const bytes = Uint8Array.from(atob(safetensors), (c) => c.charCodeAt(0));
    el("a", { href: URL.createObjectURL(new Blob([bytes])), download: "transformer.safetensors" }).click();
  });
  textSelect.addEventListener("change", chooseText);
  preset.addEventListener("change", applyPreset);
  for (const i of Object.values(inputs)) i.addEventListener("change", updateSize);
  textFile.addEventListener("change", async () => {
    const file = textFile.files[0];
    if (!file) return;
    textStatus.className = "status"; textStatus.textContent = `Uploading ${file.name}…`;
    try { const t = await uploadText(file); await refreshTexts(t.id); }
    catch (e) { textStatus.className = "status error"; textStatus.textContent = e.message; }
  });

  playground.ready.then(async () => {
    presets = await playground.call("transformer_presets");
    preset.replaceChildren(...Object.keys(presets).map((k) => el("option", { value: k }, k)));
    preset.value = "tiny";
    applyPreset();
    await refreshTexts("shakespeare");
  }).catch((e) => { status.textContent = e.message; status.className = "status error"; });
}
