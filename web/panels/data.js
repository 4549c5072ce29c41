// The Data panel: pick a built-in, an uploaded or a synthetic data set, or upload a CSV (file
// picker or drag and drop; parsed in the worker by py_core, then stored on the server); see a
// preview with column types, missing counts and statistics; choose the target (task inferred,
// overridable; preselected as py_core suggests, the summary's `target`), the features and the
// split, with a sentence on the rows left out; then on to training, or remove an upload this
// page made. The choice is `playground.selection`.
import { deleteDataset, getDataset, getHealth, listDatasets, uploadDataset } from "../api.js";
import { el, filePicker, fmtNumber, fmtSeconds, progressBar, setProgress, table } from "../ui.js";
import { KINDS } from "../kinds.js";
import { initial, save } from "../state.js";

const SYNTHETIC = "synthetic:";
// The keys that remove this browser's uploads ({id: key}): the server answers each once, to the
// page that uploaded, and removes an upload only with it.
const UPLOAD_KEYS = "playground.uploadKeys";
const uploadKeys = () => { try { return JSON.parse(localStorage.getItem(UPLOAD_KEYS)) || {}; } catch (e) { return {}; } };
function keepKey(id, key) {
  const keys = uploadKeys();
  if (key) keys[id] = key; else delete keys[id];
  try { localStorage.setItem(UPLOAD_KEYS, JSON.stringify(keys)); } catch (e) { /* storage refused: not removable here */ }
}

export function mountDataPanel(root, playground) {
  const select = el("select", { id: "dataset-select", "aria-label": "Data set" });
  const fileInput = el("input", { type: "file", id: "file-input", accept: ".csv,.tsv,.txt,text/csv", "aria-label": "CSV file" });
  const drop = el("div", { class: "drop", id: "drop-zone" }, "Drop a CSV file here, or ",
    filePicker(fileInput, "choose a file…", { id: "file-choose" }));
  const status = el("div", { class: "status", id: "data-status", role: "status", "aria-live": "polite" });
  const bar = progressBar("Reading the file", { hidden: true });
  const genParams = el("div", { class: "row", id: "generator-params" });
  const remove = el("button", { type: "button", class: "secondary small", id: "data-remove", hidden: true,
                                title: "Only this browser, which uploaded it, can remove it" }, "Remove this upload");
  const pickCard = el("div", { class: "card" }, el("h2", {}, "Data set"),
    el("div", { class: "row" }, select, remove), genParams, drop, bar, status);

  const target = el("select", { id: "target-select", "aria-label": "Target column" });
  const task = el("select", { id: "task-select", "aria-label": "Task" },
    el("option", { value: "regression" }, "regression"), el("option", { value: "classification" }, "classification"));
  const taskNote = el("span", { class: "muted", id: "task-note" });
  const features = el("div", { class: "features", id: "feature-list" });
  const testSize = el("input", { type: "number", id: "test-size", min: "0.05", max: "0.9", step: "0.05",
                                 value: initial("test") || "0.2" });
  const seed = el("input", { type: "number", id: "split-seed", value: initial("seed") || "42", step: "1" });
  const stratify = el("input", { type: "checkbox", id: "stratify", checked: initial("strat") !== "0" });
  const rowsNote = el("p", { class: "muted", id: "data-rows", role: "status" });
  // The next step, once a data set shows: the tab of each kind that trains on a target (GET
  // /api/kinds, the registry's order: the random forest first, the main road), its Train button
  // focused.
  const nexts = Object.values(KINDS).filter((k) => k.panel && k.needs.includes("target")).map((k, i) =>
    el("button", { type: "button", class: i ? "secondary" : "primary", id: i ? `data-next-${k.tab}` : "data-next", hidden: true,
                   onclick: () => { playground.showTab(k.tab); document.querySelector(`#panel-${k.tab} button.primary`)?.focus(); } },
    i ? `or ${k.label.toLowerCase()} →` : `Next: train a ${k.label.toLowerCase()} on it →`));
  const modelCard = el("div", { class: "card" }, el("h2", {}, "Target and features"),
    el("div", { class: "row" }, el("label", {}, "Target ", target), el("label", {}, "Task ", task), taskNote),
    rowsNote,
    el("h3", {}, "Features"), features,
    el("h3", {}, "Split"),
    el("div", { class: "row" }, el("label", {}, "Test fraction ", testSize), el("label", {}, "Seed ", seed),
      el("label", {}, stratify, " stratified (classes)")),
    el("div", { class: "row" }, nexts));
  const preview = el("div", { class: "card wide", id: "data-preview" }, el("h2", {}, "Preview"));
  root.append(el("div", { class: "cards" }, pickCard, modelCard), preview);

  let summary = null;       // describe() of the current data set
  let generators = {};
  let uploading = null;     // a file being read (or queued until Python has loaded)
  // What the URL asked for, applied once when that data set first shows (a reload restores it).
  let restore = { data: initial("data") || "diabetes", target: initial("target"), task: initial("task"), features: initial("features") };

  function setStatus(text, error = false) { status.textContent = text; status.className = error ? "status error" : "status"; }
  function setBar(f) {
    bar.hidden = f === null;
    if (f !== null) setProgress(bar, f);
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
    if (selected) select.value = selected.startsWith(SYNTHETIC) ? selected.split("?")[0] : selected;
    if (!select.value && select.options.length) select.value = "diabetes";
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
          const asked = restore.data?.startsWith(`${SYNTHETIC}${name}?`)
            ? new URLSearchParams(restore.data.slice(restore.data.indexOf("?") + 1)) : new URLSearchParams();
          genParams.replaceChildren(...Object.entries(generators[name].params).map(([k, v]) =>
            el("label", {}, `${k} `, el("input", { type: "number", name: k, value: asked.get(k) ?? v, step: "any", class: "short",
              onchange: () => choose() }))));
        }
        // A table the tab cannot hold is refused before it is generated.
        const { refused } = await playground.call("table_fits", [syntheticId()]);
        if (refused) { setStatus(`Not generated: ${refused}.`, true); return; }
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
    const targets = cols.filter((c) => !NOT_TARGET.has(c.type) && !c.index);
    target.replaceChildren(...targets.map((c) => el("option", { value: c.name }, c.name)));
    // py_core's suggestion (py_core.data.target), else the last column that can be one.
    const guess = targets.find((c) => c.name === desc.target) || targets[targets.length - 1];
    if (guess) target.value = guess.name;
    const again = restore.data === id || (restore.data && id.startsWith(SYNTHETIC) && restore.data.split("?")[0] === id.split("?")[0]);
    if (again && restore.target && cols.some((c) => c.name === restore.target && c.type !== "text")) target.value = restore.target;
    // Row index and dates are shown but not features by default; a date ticked becomes its
    // year, month, day and weekday (py_core.data.features).
    features.replaceChildren(...cols.map((c) => el("label", { class: "feature" },
      el("input", { type: "checkbox", value: c.name, checked: !NOT_FEATURE.has(c.type) && !c.index,
                    disabled: c.type === "text", onchange: update }), ` ${c.name} `,
      el("span", { class: "muted" }, c.index ? `${c.type}, row index` : DATES.has(c.type) ? `${c.type} → year, month, day, weekday` : c.type))));
    preview.replaceChildren(el("h2", {}, `Preview: ${desc.name}`),
      el("p", { class: "muted", id: "data-info" }, `${desc.rows} rows, ${cols.length} columns`
        + (desc.delimiter ? `, delimiter ${JSON.stringify(desc.delimiter)}` : "")
        + (desc.encoding ? `, encoding ${desc.encoding}` : "")
        + (desc.index ? `, row index ${JSON.stringify(desc.index)}` : "")
        + (cols.some((c) => c.format?.decimal === ",") ? ", decimal comma" : "")),
      el("div", { class: "scroll" }, table(["Column", "Type", "Missing", "Statistics"], cols.map((c) =>
        [c.name, typeText(c), String(c.missing), statsText(c)]), { id: "column-table" })),
      el("h3", {}, "First rows"),
      el("div", { class: "scroll" }, table(cols.map((c) => c.name),
        desc.preview.map((row) => row.map((v) => (v === null ? "–" : typeof v === "number" ? fmtNumber(v, 6) : v))),
        { id: "preview-table" })));
    previous = null;
    onTarget(again ? restore : null);
    restore = {};
    for (const next of nexts) next.hidden = false;
    remove.hidden = !uploadKeys()[id];
  }

  let previous = null;   // the target before this one: a feature again when the target moves on
  function onTarget(asked = null) {
    const col = summary?.columns.find((c) => c.name === target.value);
    if (!col) return;
    task.value = col.task || (col.type === "numeric" ? "regression" : "classification");
    taskNote.textContent = `inferred: ${task.value}`;
    if (asked?.task && ["regression", "classification"].includes(asked.task)) task.value = asked.task;
    const chosen = asked?.features ? new Set(asked.features.split(",").map(decodeURIComponent)) : null;
    for (const box of features.querySelectorAll("input")) {
      const c = summary.columns.find((x) => x.name === box.value);
      if (box.value === target.value) { box.checked = false; box.disabled = true; }
      else if (c.type !== "text") {
        if (box.value === previous) box.checked = !NOT_FEATURE.has(c.type) && !c.index;  // as it first was
        box.disabled = false;
        if (chosen) box.checked = chosen.has(box.value);
      }
    }
    previous = target.value;
    update();
  }

  function update() {
    if (!summary) return;
    const feats = [...features.querySelectorAll("input:checked")].map((b) => b.value);
    // The link lists the features unless they are the default ones (dates and a row index left
    // out): all ticked, a date among them, is not the default.
    const byDefault = (b) => { const c = summary.columns.find((x) => x.name === b.value); return !NOT_FEATURE.has(c.type) && !c.index; };
    const asDefault = [...features.querySelectorAll("input:not(:disabled)")].every((b) => b.checked === byDefault(b));
    const dataset = summary.id.startsWith(SYNTHETIC) ? syntheticId() : summary.id;
    save({ data: dataset === "diabetes" ? null : dataset, target: target.value,
           task: task.value === (summary.columns.find((c) => c.name === target.value)?.task || task.value) ? null : task.value,
           features: asDefault ? null : feats.map(encodeURIComponent).join(","),
           test: Number(testSize.value) === 0.2 ? null : testSize.value, seed: Number(seed.value) === 42 ? null : seed.value,
           strat: stratify.checked ? null : "0" });
    const tcol = summary.columns.find((c) => c.name === target.value);
    const rows = { read: summary.rows, no_target: tcol?.missing || 0 };
    rows.used = rows.read - rows.no_target;
    const gaps = summary.columns.filter((c) => feats.includes(c.name) && c.missing > 0);
    rowsNote.textContent = rowsText(rows, target.value) + (gaps.length ? ` Missing values in ${listOf(gaps.map((c) => `${c.name} (${c.missing})`))} ` +
      "are kept, not left out: the random forest fills them in (numbers with the training rows' median, categories " +
      "as \"(missing)\"); gradient boosting's trees learn which side they go to, as scikit-learn's do." : "");
    playground.selection = {
      dataset: summary.id.startsWith(SYNTHETIC) ? syntheticId() : summary.id, name: summary.name,
      target: target.value, task: task.value, features: feats, rows: summary.rows, rowsUsed: rows,
      classes: tcol?.stats?.distinct,  // the target's distinct values, where the summary counted them
      split: { test_size: Number(testSize.value), seed: Number(seed.value),
               stratify: task.value === "classification" && stratify.checked },
    };
    playground.events.dispatchEvent(new CustomEvent("selection", { detail: playground.selection }));
  }

  function upload(file) {
    uploading = readAndStore(file).finally(() => { uploading = null; });
    return uploading;
  }

  async function readAndStore(file) {
    // Checked before reading: a file over the server's cap is never read into the tab's memory.
    const capMb = (await getHealth().catch(() => null))?.limits?.max_upload_mb;
    if (capMb && file.size > capMb * 1024 * 1024) {
      setStatus(`${file.name} is ${(file.size / 2 ** 20).toFixed(0)} MB: larger than this server's ` +
        `${capMb} MB limit (playground --max-upload-mb).`, true);
      return;
    }
    if (!playground.info) {   // Python is still loading: the file waits, it is not dropped
      setStatus(`${file.name} is queued: it is read as soon as Python has loaded.`);
      setBar(0);
      try { await playground.ready; } catch (e) { setBar(null); setStatus(`Could not start Python: ${e.message}`, true); return; }
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
      keepKey(stored.id, stored.key);
      setBar(null);
      genParams.replaceChildren();   // a synthetic set's inputs do not belong to the upload
      delete genParams.dataset.for;
      await refreshList(stored.id);
      show(stored, stored.id);
      const t = stored.timings || {};
      const took = [t.upload !== undefined && `uploaded in ${fmtSeconds(t.upload)}`,
                    t.parse !== undefined && `summarised in ${fmtSeconds(t.parse)}`].filter(Boolean);
      setStatus(`${file.name}: ${stored.rows} rows, stored on the server${took.length ? ` (${took.join(", ")})` : ""}.`);
    } catch (e) {
      setBar(null);
      setStatus(e.message, true);
    }
  }

  select.addEventListener("change", choose);
  target.addEventListener("change", onTarget);
  for (const input of [task, testSize, seed, stratify]) input.addEventListener("change", update);
  // The input is emptied once read: choosing the same (edited) file again is a change again.
  fileInput.addEventListener("change", () => {
    const file = fileInput.files[0];
    fileInput.value = "";
    if (file) upload(file);
  });
  remove.addEventListener("click", async () => {
    const { id, name } = summary;
    remove.disabled = true;
    try {
      await deleteDataset(id, uploadKeys()[id]);
      keepKey(id, null);
      await refreshList("diabetes");
      await choose();
      setStatus(`Removed ${name} from the server.`);
    } catch (e) {
      setStatus(`Could not remove ${name}: ${e.message}`, true);
    } finally { remove.disabled = false; }
  });
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    if (e.dataTransfer.files[0]) upload(e.dataTransfer.files[0]);
  });

  playground.ready.then(async () => {
    generators = await playground.call("generators");
    if (uploading) { await uploading; if (summary) return; }   // a file chosen while loading comes first
    await refreshList(restore.data || "diabetes");
    if (restore.data && select.value !== (restore.data.startsWith(SYNTHETIC) ? restore.data.split("?")[0] : restore.data)) {
      const missing = restore.data;
      restore = {};
      select.value = "diabetes";
      await choose();
      setStatus(`The link's data set ${missing} is not on this server; showing diabetes.`, true);
      return;
    }
    await choose();
  }).catch((e) => setStatus(`Could not list data sets: ${e.message}`, true));
}

// What becomes of the rows, in words: `rows` {read, used, no_target} (the summary's counts
// before training, the forest job's `rows` after).
export function rowsText(rows, target) {
  if (!rows.no_target) return `All ${rows.read} rows have a value for ${target}: none is left out.`;
  return `${rows.no_target} of the ${rows.read} rows have no value for ${target} and are left out: ` +
    `the model learns from and is tested on the other ${rows.used}.`;
}

function listOf(items) {
  return items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}

const DATES = new Set(["date", "datetime"]);
const NOT_FEATURE = new Set(["text", "date", "datetime"]);  // by default; text never
const NOT_TARGET = new Set(["text", "date", "datetime"]);

function typeText(c) {
  const notes = [];
  if (c.index) notes.push("row index");
  if (c.format?.decimal) notes.push(`decimal ${JSON.stringify(c.format.decimal)}`);
  if (c.format?.thousands) notes.push(`thousands ${JSON.stringify(c.format.thousands)}`);
  return notes.length ? `${c.type} (${notes.join(", ")})` : c.type;
}

function statsText(c) {
  const s = c.stats || {};
  if (c.type === "numeric") return `min ${fmtNumber(s.min)}, max ${fmtNumber(s.max)}, mean ${fmtNumber(s.mean)}, std ${fmtNumber(s.std)}`;
  if (s.distinct !== undefined) return `${s.distinct} distinct` + (s.top !== undefined ? `, most often ${s.top}` : "");
  return "";
}
