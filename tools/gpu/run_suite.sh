#!/usr/bin/env bash
# On a lent GPU machine, inside ../shared/gpu/with-browser.sh: start the playground server, open
# the page with `?suite=NAME` in headless Chromium on the real GPU (the page drives itself and
# posts every run), wait for the suite's summary run, and copy all runs and logs to $OUT.
#   bash .gpu/bin/with-browser.sh bash tools/gpu/run_suite.sh SUITE [WAIT_SECONDS] [ONLY]
# ONLY: comma-separated words; just the suite's jobs whose label contains one of them run.
# carry: .gpu/gl .gpu/bin (.gpu/b on a fresh machine) web/node_modules web/build .whl
set -u
suite=${1:-selftest}; wait_s=${2:-300}; only=${3:-}; port=${PORT:-8000}
query="suite=$suite"; [ -n "$only" ] && query="$query&only=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$only")"
tag=$suite${only:+-$(echo "$only" | tr -c 'A-Za-z0-9\n' '_')}
out=${OUT:-/tmp/out}; mkdir -p "$out"
if [ ! -d /tmp/site/starlette ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD
data=$(mktemp -d)
# The page starts a suite without a click only with the server's key (server/suite.py).
key=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
PLAYGROUND_SUITE_KEY=$key python3 -m server --port "$port" --data-dir "$data" >"$out/server-$tag.log" 2>&1 & server=$!
api() { python3 -c "import sys, urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port$1', timeout=10).read().decode())"; }
for _ in $(seq 1 60); do api /api/health >/dev/null 2>&1 && break; sleep 0.5; done
"$CHROMIUM_BIN" --headless --no-sandbox --disable-background-networking --disable-component-update \
  --disable-sync --no-first-run --user-data-dir="$(mktemp -d)" $CHROMIUM_GPU_FLAGS \
  --enable-logging=stderr --v=0 "http://127.0.0.1:$port/?$query&suite_key=$key" >"$out/chromium-$tag.log" 2>&1 & browser=$!
t0=$(date +%s)
# GPU memory in use, twice a second, for the whole suite (issue 12: runs must give back what they took)
smi=""
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader -lms 500 >"$out/smi-$tag.csv" 2>/dev/null & smi=$!
fi
until api "/api/runs?kind=suite" | grep -q '"suite"'; do
  if [ $(( $(date +%s) - t0 )) -gt "$wait_s" ]; then echo "suite $suite: no summary after ${wait_s}s"; break; fi
  sleep 2
done
echo "suite $suite took $(( $(date +%s) - t0 ))s"
# The server's comparison runs (sklearn, py_core on wgpu-native, PyTorch...) of every posted run, then
# the environment; `python -m bench.report --runs runs-SUITE.json --env env-SUITE.json` builds
# the report back home.
python3 - "$port" "$out/runs-$tag.json" "$out/env-$tag.json" "${COMPARE_WAIT:-900}" <<'PY'
import json, os, platform, subprocess, sys, time, urllib.request
port, dump, envfile, wait = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
get = lambda p: json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}{p}", timeout=30).read())
# The listing gives summaries a page at a time; each whole run is fetched by its id.
runs, cursor = [], ""
while True:
    page = get("/api/runs?limit=1000" + (f"&cursor={cursor}" if cursor else ""))
    runs += [get(f"/api/runs/{r['id']}") for r in page["runs"]]
    cursor = page.get("next")
    if not cursor:
        break
comps, deadline = {}, time.time() + wait
for r in runs:
    if r["kind"] not in ("random_forest", "transformer"):
        continue
    while True:
        try:
            c = get(f"/api/runs/{r['id']}/comparisons")["comparisons"]
        except Exception as exc:
            c = [{"runner": "?", "status": "failed", "error": str(exc)}]
        if all(x.get("status") in ("done", "failed", "unavailable", "skipped") for x in c) or time.time() > deadline:
            break
        time.sleep(2)
    comps[r["id"]] = c
json.dump({"runs": runs, "comparisons": comps}, open(dump, "w"))
try:
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
except OSError:
    smi = ""
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
versions = {"python": platform.python_version()}
for m in ("torch", "sklearn", "numpy"):
    try: versions[m] = __import__(m).__version__
    except Exception: pass
json.dump({"gpu": smi, "cpu": cpu, "cpu_cores": os.cpu_count(), "versions": versions, "os": platform.platform()}, open(envfile, "w"))
PY
kill $browser $server $smi 2>/dev/null; wait 2>/dev/null
python3 - "$out/runs-$tag.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
for r in runs:
    a = r.get("adapter") or {}
    print(r["kind"], r.get("backend"), a.get("vendor"), a.get("architecture"), json.dumps(r.get("timings")))
    if r["kind"] == "selftest":
        for k in r["metrics"]["kernels"]:
            print(f"   {k['name']:32s} err {k['max_abs_err']:.2e} ok={k['ok']} {k['time_s']*1e3:.3f} ms {k['rate'] or 0:.1f} {k['unit']}")
    if r["kind"] == "suite":
        print("   errors:", r["metrics"]["errors"])
PY
[ -d bench ] && python3 -c "import matplotlib" 2>/dev/null && python3 -m bench.report --runs "$out/runs-$tag.json" --env "$out/env-$tag.json" --out "$out/report-$tag" 2>&1 | tail -2
