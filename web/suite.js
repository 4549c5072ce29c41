// Self-driving benchmark runs: `/?suite=NAME` loads `/web/suites/NAME.json`, runs its jobs in the
// worker (warm-up runs are run but not posted as timed), posts each timed run to the server, and
// finally posts a `suite` run that lists them. Used where Playwright cannot run (the lent GPU).
//   {"name": ..., "jobs": [{"label", "job": {...}, "warmup": 1, "repeat": 3, "warmup_job"?, "warm_s"?}, ...]}
// (warmup_job: a short version of a long job that compiles the same kernels; warm_s: below)

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
  const stops = [];
  const t0 = performance.now();
  for (const [i, entry] of suite.jobs.entries()) {
    const label = entry.label || `${entry.job.kind} ${i + 1}`;
    if (entry.stop_after_s !== undefined) {  // Stop latency: the job, Stop after s seconds, until it ends
      stops.push(await timeStop(playground, entry, label));
      log(`${label}: stopped ${stops.at(-1).latency_s?.toFixed(3)} s after Stop`);
      continue;
    }
    try {
      // warm_s: the job's kernels compile ahead, as a panel has them compiled when it shows the
      // config (py_core.browser.warm), this many seconds before the first run
      if (entry.warm_s !== undefined) {
        await playground.warm(entry.job.kind, entry.job.params || {});
        await new Promise((r) => setTimeout(r, entry.warm_s * 1000));
      }
      for (let w = 0; w < (entry.warmup ?? 1); w++) {
        log(`${label}: warm-up ${w + 1}`);
        await playground.compute(entry.warmup_job || entry.job).done;
      }
      for (let r = 0; r < (entry.repeat ?? 1); r++) {
        log(`${label}: run ${r + 1}/${entry.repeat ?? 1}`);
        // memory: the GPU memory the worker holds before and after the job, in the run's extra
        // (a job that leaks shows as an "after" that grows run after run).
        const run = await playground.run(entry.job, { extra: { suite: suite.name, label, rep: r }, memory: true });
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
    metrics: { runs, errors, ok: errors.length === 0, ...(stops.length ? { stops } : {}),
               memory: await playground.memory().catch(() => null) },
    timings: { total: (performance.now() - t0) / 1000 },
  });
  log(`suite ${suite.name} done: ${runs.length} runs, ${errors.length} errors`);
  return summary;
}

// Runs entry.job, presses Stop (playground.stop, what the Stop buttons call) entry.stop_after_s
// seconds in, and measures how long the job takes to end after it: {label, stop_after_s,
// latency_s, stopped, message, memory: {before, after}} (GPU memory the worker holds).
async function timeStop(playground, entry, label) {
  const before = await playground.memory().catch(() => null);
  const { done } = playground.compute(entry.job);
  let tStop = null;
  const timer = setTimeout(() => { tStop = performance.now(); playground.stop(); }, entry.stop_after_s * 1000);
  let stopped = false, message = "finished before Stop";
  try {
    await done;
  } catch (e) {
    stopped = Boolean(e.stopped);
    message = e.detail ? e.detail.split("\n").filter(Boolean).at(-1) : String(e.message || e);
  }
  const tEnd = performance.now();
  clearTimeout(timer);
  return { label, stop_after_s: entry.stop_after_s, stopped, message,
           latency_s: tStop === null ? null : (tEnd - tStop) / 1000,
           memory: { before, after: await playground.memory().catch(() => null) } };
}
