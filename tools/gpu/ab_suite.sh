#!/usr/bin/env bash
# On a lent GPU machine, inside ../shared/gpu/with-browser.sh: the same suite with two builds of
# py_core, alternated, for an A/B on one warm GPU. The new build is web/build; the old one
# .alt/build (made from an earlier commit in a worktree with `python tools/build_wheel.py
# .alt/build`, and carried). ORDER: the sides in turn (default "new old new old"). Each run's
# files go to new-I or old-I, and after every run all of them into $OUT/ab.tgz (the device tool
# brings back few files, and whatever is there if the call runs out of time). A build whose page
# glue differs carries its web files in .alt/NAME.web/ (say, `git show REV:web/gpu.js`): they
# replace web/'s for its turns.
#   bash .gpu/bin/with-browser.sh bash tools/gpu/ab_suite.sh SUITE WAIT ONLY ["new old new"]
set -u
suite=$1; wait_s=$2; only=$3; order=${4:-new old new old}
out=${OUT:-/tmp/out}; work=$(mktemp -d)
cp -r web/build /tmp/build-new
web_orig=$(mktemp -d); cp -p web/*.js web/*.html "$web_orig"/
i=0
for side in $order; do
  i=$((i + 1))
  rm -rf web/build
  cp -p "$web_orig"/* web/
  [ "$side" != new ] && [ -d ".alt/$side.web" ] && cp -p ".alt/$side.web"/* web/
  case $side in  # new: web/build; old: .alt/build; any other name: .alt/NAME (a third build)
    new) cp -r /tmp/build-new web/build ;;
    old) cp -r .alt/build web/build ;;
    *) cp -r ".alt/$side" web/build ;;
  esac
  OUT=$work/$side-$i bash tools/gpu/run_suite.sh "$suite" "$wait_s" "$only" | grep -v '^random_forest\|^transformer'
  tar czf "$out/ab.tgz.part" -C "$work" . && mv "$out/ab.tgz.part" "$out/ab.tgz"
done
rm -rf web/build && cp -r /tmp/build-new web/build && cp -p "$web_orig"/* web/
