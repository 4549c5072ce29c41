#!/usr/bin/env bash
# First, here: PYTHONPATH=. python tools/gpu/f16probe/prepare.py .  (writes gen/, ignored by git).
# The subgroup-matrix (tensor core) f16 matmul probe: adapter features and configs, correctness of
# py_core/kernels/matmul_f16 against an f16-rounding reference, TFLOP/s at 4096^3 and on the
# transformer's shapes next to the f32 kernel. On the lent GPU (see ../README.md):
#   bash .gpu/bin/with-browser.sh bash tools/gpu/f16probe/run.sh
# Locally it runs on SwiftShader, which has no subgroup matrices: it reports that and stops.
# PROBE_DAWN_FLAGS replaces the f16 flag (e.g. to add disable_robustness); PROBE_TAG names the files.
# PROBE_PAGE=direct.html: matmul_f16's direct entries and cast (direct.js; its query from gen/direct.query).
# PROBE_QUERY: e.g. "variants=all&sizes=4096,8192". Result lines go to stdout and $OUT/f16probe.jsonl.
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
CH=${CHROMIUM_BIN:-/usr/bin/chromium}
FLAGS="${CHROMIUM_GPU_FLAGS:---enable-unsafe-webgpu} ${PROBE_DAWN_FLAGS-${CHROMIUM_F16_FLAG:-}}"
port=${PROBE_PORT:-8798}
mkdir -p "${OUT:-/tmp}"; export RESULT=${OUT:-/tmp}/f16probe${PROBE_TAG:-}.jsonl; rm -f "$RESULT"
python3 "$here/serve.py" $port "$root" & sp=$!
sleep 1
$CH --headless --no-sandbox --disable-background-networking --disable-component-update --disable-sync \
  --no-first-run --user-data-dir="$(mktemp -d)" $FLAGS \
  "http://localhost:$port/tools/gpu/f16probe/${PROBE_PAGE:-probe.html}?${PROBE_QUERY:-$(cat "$root/gen/direct.query" 2>/dev/null)}" >"${OUT:-/tmp}/f16probe${PROBE_TAG:-}-chromium.log" 2>&1 & cp=$!
for i in $(seq 1 ${PROBE_WAIT:-400}); do grep -q '"done"' "$RESULT" 2>/dev/null && break; sleep 1; done
cat "$RESULT" 2>/dev/null || { echo "no result"; tail -20 "${OUT:-/tmp}/f16probe${PROBE_TAG:-}-chromium.log"; }
kill $cp $sp 2>/dev/null; wait 2>/dev/null || true
