// The server's HTTP API, as the page uses it.

async function json(res) {
  let body = null;
  try { body = await res.json(); } catch (e) { /* not JSON */ }
  if (!res.ok) {
    const err = new Error(body?.error?.message || `${res.status} ${res.statusText}`);
    err.status = res.status;
    err.detail = body?.error;
    throw err;
  }
  return body;
}

// This tab's id, sent with what queues server jobs: the server's per-client queue share is the
// address and this id, so a script on the same machine filling its own share leaves this tab's.
// Kept for the tab's life (sessionStorage), so a reload keeps its share.
const TAB_KEY = "playground.tab";
function tabId() {
  try {
    let id = sessionStorage.getItem(TAB_KEY);
    if (!id) sessionStorage.setItem(TAB_KEY, (id = crypto.randomUUID()));
    return id;
  } catch (e) {
    return (tabId.fallback ??= crypto.randomUUID());   // storage refused: this page's life
  }
}
export const clientHeaders = () => ({ "X-Playground-Client": tabId() });

// Posts a run; the id is made here, so a retried post is stored once.
export async function postRun(run, attempts = 4) {
  let delay = 250;
  for (let i = 1; ; i++) {
    try {
      const res = await fetch("/api/runs", {
        method: "POST", headers: { "Content-Type": "application/json", ...clientHeaders() }, body: JSON.stringify(run),
      });
      if (res.status >= 500 && i < attempts) throw new Error(`server answered ${res.status}`);
      return await json(res);
    } catch (e) {
      if (e.status && e.status < 500) throw e;   // the server refused it: retrying cannot help
      if (i >= attempts) throw e;
      await new Promise((r) => setTimeout(r, delay));
      delay *= 2;
    }
  }
}

export const getRuns = async (params = {}) =>
  json(await fetch(`/api/runs?${new URLSearchParams(params)}`));
// The newest `n` runs of a kind, whole (the listing gives summaries; each run is fetched by id).
export async function getRecentRuns(kind, n = 10) {
  const { runs } = await getRuns({ kind, limit: n });
  return Promise.all(runs.map((r) => getRun(r.id)));
}
export const getRunFacets = async () => json(await fetch("/api/runs/facets"));
export const deleteRun = async (id) => {
  const res = await fetch(`/api/runs/${encodeURIComponent(id)}`, { method: "DELETE" });
  if (!res.ok) await json(res);
};
export const getRun = async (id) => json(await fetch(`/api/runs/${encodeURIComponent(id)}`));
// A stored forest run's model as ONNX (a Blob); the server may fit it again first (seconds).
export async function getOnnx(id) {
  const res = await fetch(`/api/runs/${encodeURIComponent(id)}/model.onnx`);
  if (!res.ok) await json(res);
  return res.blob();
}
// The Python that loads a run's download elsewhere (server/snippets.py), as text; `model`
// "onnx": its ONNX file's, where the kind's own download is another.
export async function getSnippet(id, model = null) {
  const res = await fetch(`/api/runs/${encodeURIComponent(id)}/snippet${model ? `?model=${model}` : ""}`);
  if (!res.ok) await json(res);
  return res.text();
}
// Cancels a run's queued and running server comparisons; answers as GET .../comparisons.
export const cancelComparisons = async (id) =>
  json(await fetch(`/api/runs/${encodeURIComponent(id)}/comparisons`, { method: "DELETE" }));
export const getHealth = async () => json(await fetch("/api/health"));

export const listDatasets = async () => json(await fetch("/api/datasets"));
export const getDataset = async (id) => json(await fetch(`/api/datasets/${encodeURIComponent(id)}`));
// Removes an upload: only with the key its upload answered (server/datasets.py).
export const deleteDataset = async (id, key) => json(await fetch(`/api/datasets/${encodeURIComponent(id)}`,
  { method: "DELETE", headers: key ? { "X-Dataset-Key": key } : {} }));

// Uploads a file (multipart, field "file"); XHR rather than fetch for upload progress.
export function uploadDataset(file, opts = {}) { return uploadTo("/api/datasets", file, opts); }

function uploadTo(url, file, { name, delimiter, onProgress } = {}) {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    form.append("file", file, file.name);
    if (name) form.append("name", name);
    if (delimiter) form.append("delimiter", delimiter);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress?.(e.loaded / e.total);
    xhr.onload = () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch (e) { /* not JSON */ }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else {
        const err = new Error(body?.error?.message || `upload failed: ${xhr.status}`);
        err.status = xhr.status;
        err.detail = body?.error;
        reject(err);
      }
    };
    xhr.onerror = () => reject(new Error("upload failed: the server could not be reached"));
    xhr.send(form);
  });
}

export const listTexts = async () => json(await fetch("/api/texts"));
export const getText = async (id) => json(await fetch(`/api/texts/${encodeURIComponent(id)}`));
export function uploadText(file, opts = {}) { return uploadTo("/api/texts", file, opts); }
