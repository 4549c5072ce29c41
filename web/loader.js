// Byte-level loading progress: fetches the large files Pyodide is about to load, counting the
// bytes as they arrive, so that Pyodide then finds them in the HTTP cache (the versioned
// /pyodide/v<version>/ URLs are immutable). A gzip-compressed response says its decoded size in
// `x-decoded-length`; the reader sees decoded bytes, so that is the total to count against.
export async function prefetch(urls, onBytes) {
  const totals = new Array(urls.length).fill(0), got = new Array(urls.length).fill(0);
  const report = () => onBytes(got.reduce((a, b) => a + b, 0), totals.reduce((a, b) => a + b, 0));
  await Promise.all(urls.map(async (url, i) => {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`could not load ${url}: ${res.status} ${res.statusText}`);
    totals[i] = Number(res.headers.get("x-decoded-length") || res.headers.get("content-length") || 0);
    report();
    if (!res.body) { await res.arrayBuffer(); return; }
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      got[i] += value.byteLength;
      if (got[i] > totals[i]) totals[i] = got[i];
      report();
    }
  }));
}
