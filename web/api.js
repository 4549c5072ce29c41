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

// Posts a run; the id is made here, so a retried post is stored once.
export async function postRun(run, attempts = 4) {
  let delay = 250;
  for (let i = 1; ; i++) {
    try {
      const res = await fetch("/api/runs", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(run),
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
export const getRun = async (id) => json(await fetch(`/api/runs/${encodeURIComponent(id)}`));
export const getHealth = async () => json(await fetch("/api/health"));
