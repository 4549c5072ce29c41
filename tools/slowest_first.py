"""The order in which `make test`'s two workers take the test files (pytest -n 2 --dist loadfile:
a worker about to run out of tests takes the next file).

xdist would order the files by their number of tests, which leaves the files of one or two long
tests (a corpus, a benchmark, a transformer) to the end, one worker running them while the other
stands idle. The slow files go first instead, slowest first (a worker's seconds on CI), the others
after them in name order: the last files are short and the two workers end close together.
tests/conftest.py and e2e/conftest.py each give their slowest files."""
from __future__ import annotations


def keep_order(config) -> None:
    """For pytest_configure: xdist keeps the order pytest_collection_modifyitems gives."""
    config.option.loadscopereorder = False


def slowest_first(items, slowest: tuple[str, ...]) -> None:
    """For pytest_collection_modifyitems: the files named in `slowest` first, in that order (a
    file's tests keep theirs), then the rest as collected."""
    rank = {name: i for i, name in enumerate(slowest)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
