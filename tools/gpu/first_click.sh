#!/usr/bin/env bash
# Issue 34.2's figure on the lent GPU: the first job in a fresh tab against the same job again,
# this build ("new") against the commit before compiling ahead ("old"), a fresh Chromium for each
# job (web/suites/first-click.json: no warm-up, so run 1 of each browser is the first click).
#
# Here, once, from the project root (the old side's wheel and page glue into the ignored .alt/):
#   bash tools/gpu/first_click.sh prepare [BASE]       # BASE: cb1f8c1, main before issue 34.2
# On the GPU machine, after `bash .gpu/bin/stage.sh` (tools/gpu/README.md), one call each, carry
# [".gpu/gl", ".gpu/bin", ".gpu/b", "web/node_modules", "web/build", ".whl", ".alt"]:
#   bash .gpu/bin/with-browser.sh bash tools/gpu/first_click.sh run diabetes,regression
#   bash .gpu/bin/with-browser.sh bash tools/gpu/first_click.sh run tiny,shakespeare
# Back here, the table (first run, later runs, compile waited, pipelines started, new and old):
#   mkdir -p /tmp/fc && for t in FILES_AT/*/ab.tgz; do d=/tmp/fc/$(basename $(dirname $t)); \
#     mkdir -p $d && tar xzf $t -C $d; done && python -m bench.first_click --suite-runs /tmp/fc
set -u
mode=${1:-run}
if [ "$mode" = prepare ]; then
  base=${2:-cb1f8c1}; root=$PWD; tmp=$(mktemp -d)
  git worktree add -q --detach "$tmp/old" "$base" || exit 1
  (cd "$tmp/old" && "${PYTHON:-python3}" tools/build_wheel.py "$root/.alt/build") || exit 1
  git worktree remove --force "$tmp/old"
  mkdir -p .alt/old.web
  for f in gpu.js worker.js app.js suite.js; do git show "$base:web/$f" >".alt/old.web/$f"; done
  echo "old side ($base) in .alt/build and .alt/old.web"
  exit 0
fi
words=${2:-diabetes,regression,tiny,shakespeare}
out=${OUT:-/tmp/out}
export COMPARE_WAIT=${COMPARE_WAIT:-5}  # the machine has no Dask: the comparisons never come
for word in ${words//,/ }; do
  mkdir -p "$out/$word"
  OUT=$out/$word bash tools/gpu/ab_suite.sh first-click 300 "$word" "new old new old"
done
