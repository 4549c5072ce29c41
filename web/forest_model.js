// A trained forest as the page holds it: the compact binary export of py_core/forest/export.py
// (a Uint8Array, transferred from the worker without a copy through a string). The JSON export is
// written from it only when a person downloads it, tree by tree, into a Blob: never one string.

const MAGIC = "PCFOREST";

// {header, counts, feature, threshold, left, value} of a binary export (views, no copies).
export function readForest(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (u8.length < 16 || new TextDecoder().decode(u8.subarray(0, 8)) !== MAGIC) {
    throw new Error("not a py_core.forest binary export (no PCFOREST signature)");
  }
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const headerBytes = dv.getUint32(12, true);
  const header = JSON.parse(new TextDecoder().decode(u8.subarray(16, 16 + headerBytes)));
  const T = header.n_trees, N = header.n_nodes, K = header.n_outputs;
  let at = u8.byteOffset + 16 + headerBytes;
  if (u8.byteLength !== 16 + headerBytes + 4 * (T + 3 * N + N * K)) {
    throw new Error("py_core.forest binary export: its length does not match its header");
  }
  // Typed arrays need 4-byte aligned offsets: copy once if the bytes sit at an odd place.
  const buf = at % 4 === 0 ? u8.buffer : u8.slice().buffer;
  if (buf !== u8.buffer) at = 16 + headerBytes;
  const take = (Type, count) => { const a = new Type(buf, at, count); at += 4 * count; return a; };
  return { header, counts: take(Uint32Array, T), feature: take(Int32Array, N),
           threshold: take(Float32Array, N), left: take(Int32Array, N), value: take(Float32Array, N * K) };
}

const list = (typed) => JSON.stringify(Array.from(typed));

// The JSON format (py_core.forest, version 1: export.py's to_dict plus "data") as string parts:
// `new Blob(forestJSONParts(bytes))` is the file.
export function forestJSONParts(bytes) {
  const f = readForest(bytes);
  const { n_trees: T, n_nodes: _N, ...head } = f.header;
  const K = head.n_outputs;
  const parts = [JSON.stringify(head).slice(0, -1) + ',"trees":['];
  let start = 0;
  for (let t = 0; t < T; t++) {
    const m = f.counts[t];
    const left = f.left.subarray(start, start + m);
    const right = Int32Array.from(left, (c) => (c >= 0 ? c + 1 : -1));
    const vals = f.value.subarray(K * start, K * (start + m));
    let value;
    if (K === 1) value = list(vals);
    else {
      const rows = [];
      for (let i = 0; i < m; i++) rows.push(list(vals.subarray(i * K, (i + 1) * K)));
      value = `[${rows.join(",")}]`;
    }
    parts.push(`${t ? "," : ""}{"feature":${list(f.feature.subarray(start, start + m))},` +
               `"threshold":${list(f.threshold.subarray(start, start + m))},"left":${list(left)},` +
               `"right":${list(right)},"value":${value}}`);
    start += m;
  }
  parts.push("]}");
  return parts;
}

// The parsed JSON export (for tests: a large forest should be downloaded, not parsed).
export async function forestJSON(bytes) {
  return JSON.parse(await new Blob(forestJSONParts(bytes)).text());
}

export function download(parts, type, name) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob(parts, { type }));
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}
