// The Data panel: pick a built-in, an uploaded or a synthetic data set, or upload a CSV (file
// picker or drag and drop; parsed in the worker by py_core, then stored on the server); see a
// preview with column types, missing counts and statistics; choose the target (task inferred,
// overridable), the features and the split. The choice is `playground.selection`.
import { getDataset, getHealth, listDatasets, uploadDataset } from "../api.js";
import { el, fmtNumber, table } from "../ui.js";

const SYNTHETIC = "synthetic:";

export function mountDataPanel(root, playground) {
  const select = el("select", { id: "dataset-select", "aria-label": "Data set" });
  const fileInput = el("input", { type: "file", id: "file-input", accept: ".csv,.tsv,.txt,text/csv" });
  const drop = el("div", { class: "drop", id: "drop-zone" }, "Drop a CSV file here, or ", el("label", { class: "link" },
    "choose one", fileInput));
  const status = el("div", { class: "status", id: "data-status" });
  const bar = el("div", { class: "bar wide", hidden: true }, el("div", { class: "fill" }));
  const genParams = el("div", { class: "row", id: "generator-params" });
  const pickCard = el("div", { class: "card" }, el("h2", {}, "Data set"),
    el("div", { class: "row" }, select), genParams, drop, bar, status);

  const target = el("select", { id: "target-select", "aria-label": "Target column" });
  const task = el("select", { id: "task-select", "aria-label": "Task" },
    el("option", { value: "regression" }, "regression"), el("option", { value: "classification" }, "classification"));
  const taskNote = el("span", { class: "muted", id: "task-note" });
  const features = el("div", { class: "features", id: "feature-list" });
  const testSize = el("input", { type: "number", id: "test-size", min: "0.05", max: "0.9", step: "0.05", value: "0.2" });
  const seed = el("input", { type: "number", id: "split-seed", value: "42", step: "1" });
  const stratify = el("input", { type: "checkbox", id: "stratify", checked: true });
  const modelCard = el("div", { class: "card" }, el("h2", {}, "Target and features"),
    el("div", { class: "row" }, el("label", {}, "Target ", target), el("label", {}, "Task ", task), taskNote),
    el("h3", {}, "Features"), features,
    el("h3", {}, "Split"),
    el("div", { class: "row" }, el("label", {}, "Test fraction ", testSize), el("label", {}, "Seed ", seed),
      el("label", {}, stratify, " stratified (classes)")));
  const preview = el("div", { class: "card wide", id: "data-preview" }, el("h2", {}, "Preview"));
  root.append(el("div", { class: "cards" }, pickCard, modelCard), preview);

  let summary = null;       // describe() of the current data set
  let generators = {};

  function setStatus(text, error = false) { status.textContent = text; status.className = error ? "status error" : "status"; }
  function setBar(f) {
    bar.hidden = f === null;
    if (f !== null) bar.firstChild.style.width = `${Math.round(f * 100)}%`;
  }

  async function refreshList(selected) {
    const { datasets } = await listDatasets();
    select.replaceChildren(
      el("optgroup", { label: "Built-in" }, datasets.filter((d) => d.builtin).map((d) =>
        el("option", { value: d.id }, `${d.name} (${d.rows} rows)`))),
      el("optgroup", { label: "Uploaded" }, datasets.filter((d) => !d.builtin).map((d) =>
        el("option", { value: d.id }, `${d.name} (${d.rows} rows)`))),
      el("optgroup", { label: "Synthetic (generated in the tab)" }, Object.entries(generators).map(([name, g]) =>
        el("option", { value: SYNTHETIC + name }, `${name} (${g.task})`))));
    if (selected) select.value = selected;
  }

  function syntheticId() {
    const name = select.value.slice(SYNTHETIC.length);
    const q = new URLSearchParams();
    for (const input of genParams.querySelectorAll("input")) q.set(input.name, input.value);
    return `${SYNTHETIC}${name}?${q}`;
  }

  async function choose() {
    const id = select.value;
    if (!id) return;
    setStatus("Loading…");
    try {
      if (id.startsWith(SYNTHETIC)) {
        const name = id.slice(SYNTHETIC.length);
        if (genParams.dataset.for !== name) {
          genParams.dataset.for = name;
          genParams.replaceChildren(...Object.entries(generators[name].params).map(([k, v]) =>
            el("label", {}, `${k} `, el("input", { type: "number", name: k, value: v, step: "any", class: "short",
              onchange: () => choose() }))));
        }
        show(await playground.call("describe_synthetic", [syntheticId()]), syntheticId());
      } else {
        genParams.replaceChildren();
        delete genParams.dataset.for;
        show(await getDataset(id), id);
      }
      setStatus("");
    } catch (e) {
      setStatus(`Could not load the data set: ${e.message}`, true);
    }
  }

  function show(desc, id) {
    summary = { ...desc, id };
    const cols = desc.columns;
    target.replaceChildren(...cols.filter((c) => c.type !== "text").map((c) => el("option", { value: c.name }, c.name)));
    const guess = cols.find((c) => c.name === "target") || cols.find((c) => c.name === "y") || cols[cols.length - 1];
    if (guess) target.value = guess.name;
    features.replaceChildren(...cols.map((c) => el("label", { class: "feature" },
      el("input", { type: "checkbox", value: c.name, checked: c.type !== "text", disabled: c.type === "text",
                    onchange: update }), ` ${c.name} `, el("span", { class: "muted" }, c.type))));
    preview.replaceChildren(el("h2", {}, `Preview: ${desc.name}`),
      el("p", { class: "muted" }, `${desc.rows} rows, ${cols.length} columns`
        + (desc.delimiter ? `, delimiter ${JSON.stringify(desc.delimiter)}` : "")),
      el("div", { class: "scroll" }, table(["Column", "Type", "Missing", "Statistics"], cols.map((c) =>
        [c.name, c.type, String(c.missing), statsText(c)]), { id: "column-table" })),
      el("h3", {}, "First rows"),
      el("div", { class: "scroll" }, table(cols.map((c) => c.name),
        desc.preview.map((row) => row.map((v) => (v === null ? "–" : typeof v === "number" ? fmtNumber(v, 6) : v))),
        { id: "preview-table" })));
    onTarget();
  }

  function onTarget() {
    const col = summary?.columns.find((c) => c.name === target.value);
    if (!col) return;
    task.value = col.task || (col.type === "numeric" ? "regression" : "classification");
    taskNote.textContent = `inferred: ${task.value}`;
    for (const box of features.querySelectorAll("input")) {
      const c = summary.columns.find((x) => x.name === box.value);
      if (box.value === target.value) { box.checked = false; box.disabled = true; }
      else if (c.type !== "text") box.disabled = false;
    }
    update();
  }

  function update() {
    if (!summary) return;
    const feats = [...features.querySelectorAll("input:checked")].map((b) => b.value);
    playground.selection = {
      dataset: summary.id.startsWith(SYNTHETIC) ? syntheticId() : summary.id, name: summary.name,
      target: target.value, task: task.value, features: feats, rows: summary.rows,
      split: { test_size: Number(testSize.value), seed: Number(seed.value),
               stratify: task.value === "classification" && stratify.checked },
    };
    playground.events.dispatchEvent(new CustomEvent("selection", { detail: playground.selection }));
  }

  async function upload(file) {
    // Checked before reading: a file over the server's cap is never read into the tab's memory.
    const capMb = (await getHealth().catch(() => null))?.limits?.max_upload_mb;
    if (capMb && file.size > capMb * 1024 * 1024) {
      setStatus(`${file.name} is ${(file.size / 2 ** 20).toFixed(0)} MB: larger than this server's ` +
        `${capMb} MB limit (playground --max-upload-mb).`, true);
      return;
    }
    setStatus(`Reading ${file.name}…`);
    setBar(0);
    try {
      const bytes = new Uint8Array(await file.arrayBuffer());
      const parsed = await playground.call("describe_bytes", [bytes, file.name, null], {
        onProgress: (p) => { setBar(p.fraction * 0.5); setStatus(`Parsing ${file.name} in the tab… ${Math.round(p.fraction * 100)}%`); },
      });
      if (parsed.error) {
        const e = parsed.error;
        setStatus(e.message, true);
        setBar(null);
        return;
      }
      setStatus(`Parsed ${parsed.rows} rows; uploading to the server…`);
      const stored = await uploadDataset(file, { onProgress: (f) => setBar(0.5 + f * 0.5) });
      setBar(null);
      await refreshList(stored.id);
      show(stored, stored.id);
      setStatus(`${file.name}: ${stored.rows} rows, stored on the server.`);
    } catch (e) {
      setBar(null);
      setStatus(e.message, true);
    }
  }

  select.addEventListener("change", choose);
  target.addEventListener("change", onTarget);
  for (const input of [task, testSize, seed, stratify]) input.addEventListener("change", update);
  fileInput.addEventListener("change", () => fileInput.files[0] && upload(fileInput.files[0]));
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    if (e.dataTransfer.files[0]) upload(e.dataTransfer.files[0]);
  });

  playground.ready.then(async () => {
    generators = await playground.call("generators");
    await refreshList("diabetes");
    await choose();
  }).catch((e) => setStatus(`Could not list data sets: ${e.message}`, true));
}

function statsText(c) {
  const s = c.stats || {};
  if (c.type === "numeric") return `min ${fmtNumber(s.min)}, max ${fmtNumber(s.max)}, mean ${fmtNumber(s.mean)}, std ${fmtNumber(s.std)}`;
  if (s.distinct !== undefined) return `${s.distinct} distinct` + (s.top !== undefined ? `, most often ${s.top}` : "");
  return "";
}
