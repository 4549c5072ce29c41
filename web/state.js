// The page's state in its URL: the tab, the data set, target, features and split, each model's
// parameters. Panels read what they need when they mount (`initial(key)`) and write what the
// person changes (`save({key: value})`, null or "" removes the key); the address bar then holds
// a link that opens the same set-up (history.replaceState: no history entry per keystroke).
const start = new URLSearchParams(location.search);

export const initial = (key) => start.get(key);

export function save(values, prefix = null) {
  const q = new URLSearchParams(location.search);
  // With a prefix, `values` is the whole group: its other keys go. Keys kept keep their place, so
  // a panel that writes its unchanged set-up again (as it restores) leaves the link as it was.
  if (prefix !== null) for (const k of [...q.keys()]) if (k.startsWith(prefix) && !(k in values)) q.delete(k);
  for (const [k, v] of Object.entries(values)) {
    if (v === null || v === undefined || v === "") q.delete(k);
    else q.set(k, String(v));
  }
  const text = q.toString();
  const next = `${location.pathname}${text ? `?${text}` : ""}${location.hash}`;
  if (next !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(history.state, "", next);
}

// Keys a fresh set-up drops (a new data set clears the old one's target and features).
export function clear(prefix) {
  const q = new URLSearchParams(location.search);
  for (const k of [...q.keys()]) if (k.startsWith(prefix)) q.delete(k);
  const text = q.toString();
  history.replaceState(history.state, "", `${location.pathname}${text ? `?${text}` : ""}${location.hash}`);
}

export const shareLink = () => location.href;

// Rates a tab measured, kept in this browser's localStorage per adapter (what a run's `backend`
// and `adapter` name): `adapterId(info)` is the key's adapter part; `sameAdapter(run, info)`
// whether a stored run ran on the adapter `info` describes (a server's run: no description).
export const adapterId = (info) =>
  `${info.backend}|${info.adapter?.vendor || ""}|${info.adapter?.architecture || ""}|${info.adapter?.description || ""}`;
export const sameAdapter = (run, info) => run.backend === info.backend && run.adapter?.vendor === info.adapter?.vendor
  && run.adapter?.architecture === info.adapter?.architecture;
