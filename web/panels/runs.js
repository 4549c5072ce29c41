// The runs panel: past runs from the server, newest first.
import { getRuns } from "../api.js";
import { el, fmtNumber, fmtSeconds, table } from "../ui.js";

function summary(run) {
  const m = run.metrics || {};
  if (run.kind === "selftest") return m.all_ok ? `${m.kernels?.length} kernels ok` : "kernels disagree";
  for (const key of ["mse", "accuracy", "val_loss"]) if (key in m) return `${key} ${fmtNumber(m[key])}`;
  return "";
}

export function mountRunsPanel(root, playground) {
  const list = el("div", { id: "runs-list", class: "scroll" });
  const refresh = el("button", { class: "secondary", onclick: () => load() }, "Refresh");
  root.append(el("div", { class: "card" }, el("div", { class: "row" }, el("h2", {}, "Runs"), refresh), list));

  async function load() {
    try {
      const { runs } = await getRuns({ limit: 200 });
      list.replaceChildren(runs.length ? table(["When", "Kind", "Backend", "Adapter", "Result", "Time"],
        runs.map((r) => [new Date(r.created_at).toLocaleString(), r.kind, r.backend,
          r.adapter?.vendor || r.adapter?.device || "–", summary(r), fmtSeconds(r.timings?.total)])) :
        el("p", { class: "muted" }, "No runs yet."));
    } catch (e) {
      list.replaceChildren(el("p", { class: "status error" }, `Could not list runs: ${e.message}`));
    }
  }
  playground.onRun(() => load());
  load();
}
