// Self-driving benchmark runs: `/?suite=NAME` loads `/web/suites/NAME.json`, runs its jobs in the
// worker (warm-up runs are run but not posted as timed), posts each timed run to the server, and
// finally posts a `suite` run that lists them. Used where Playwright cannot run (the lent GPU).
//   {"name": ..., "jobs": [{"label", "job": {...}, "warmup": 1, "repeat": 3, "warmup_job"?}, ...]}
// (warmup_job: a short version of a long job that compiles the same kernels)

async function settled(runId, timeoutS) {
  const deadline = performance.now() + timeoutS * 1000;
  while (performance.now() < deadline) {
    const res = await fetch(`/api/runs/${runId}/comparisons`).catch(() => null);
    if (!res || !res.ok) return;
    const { comparisons, enabled } = await res.json();
    if (enabled === false || comparisons.every((c) => ["done", "failed", "unavailable"].includes(c.status))) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function runSuite(name, playground, log = () => {}, only = null) {
  const res = await fetch(`/web/suites/${encodeURIComponent(name)}.json`, { cache: "no-store" });
  if (!res.ok) throw new Error(`no suite ${name}: ${res.status}`);
  const suite = await res.json();
  // `only`: run just the jobs whose label contains one of these comma-separated words.
  if (only) suite.jobs = suite.jobs.filter((j) => only.split(",").some((w) => (j.label || "").includes(w)));
  const info = await playground.ready;
  const runs = [];
  const errors = [];
  const t0 = performance.now();
  for (const [i, entry] of suite.jobs.entries()) {
    const label = entry.label || `${entry.job.kind} ${i + 1}`;
    try {
      for (let w = 0; w < (entry.warmup ?? 1); w++) {
        log(`${label}: warm-up ${w + 1}`);
        await playground.compute(entry.warmup_job || entry.job).done;
      }
      for (let r = 0; r < (entry.repeat ?? 1); r++) {
        log(`${label}: run ${r + 1}/${entry.repeat ?? 1}`);
        const run = await playground.run(entry.job, { extra: { suite: suite.name, label, rep: r } });
        runs.push({ id: run.id, label, rep: r });
        // The server's runs of this job share the machine (and its GPU): let them finish before
        // the next timed run, so they never overlap a clock.
        await settled(run.id, suite.comparison_timeout_s ?? 300);
      }
    } catch (e) {
      errors.push({ label, message: String(e.message || e) });
      log(`${label}: failed: ${e.message}`);
    }
  }
  const summary = await playground.post({
    id: crypto.randomUUID(), kind: "suite", config: { suite: suite.name, jobs: suite.jobs },
    backend: info.backend, adapter: info.adapter,
    metrics: { runs, errors, ok: errors.length === 0 },
    timings: { total: (performance.now() - t0) / 1000 },
  });
  log(`suite ${suite.name} done: ${runs.length} runs, ${errors.length} errors`);
  return summary;
}
