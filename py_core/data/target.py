"""The target a data set suggests before anyone picks one (`Table.describe()["target"]`).

    default_target(table.describe())   # -> "Species", or None when no column would do

A column can be a target when it is not the row index, not free text, a date or an id, holds at
least two distinct values and has a value in at least half of the rows: a target mostly missing
trains on the few rows that have one (penguins-raw's `Comments`, 84% empty, left 43 of 344 rows).
Among those, a column named like a target (TARGET_NAMES, any case) wins, in TARGET_NAMES' order;
else the last one, where R, pandas and spreadsheets put the outcome. The page preselects it; the
person can pick any other.
"""
from __future__ import annotations

import re

# Names of outcomes, most telling first: a file with both `Class` and `Survived` (R's Titanic)
# is about survival; `y` comes last, as it is also a coordinate beside `x`.
TARGET_NAMES = ("target", "label", "outcome", "response", "survived", "diagnosis", "species",
                "class", "y")
# Words of free-text columns whose few distinct values make them look categorical.
FREE_TEXT = re.compile(r"comment|remark|note|description", re.IGNORECASE)
# Ids: `id`, `ID`, `Individual ID`, `subject_id`, R's `rownames` (any case); `familyId` (camel
# case only: `acid` and `paid` are no ids).
ID_WORD = re.compile(r"(^|[\s_.\-])(id|ids|index|rownames?|row\.names)$", re.IGNORECASE)
CAMEL_ID = re.compile(r"[a-z](Id|ID)$")
MOSTLY_MISSING = 0.5  # a target missing in more than this fraction of rows is refused


def default_target(summary: dict) -> str | None:
    """The suggested target of `summary` (`Table.describe()` or `summarize_csv`: its "rows" and
    "columns"), or None when no column can be one."""
    rows = summary["rows"]
    usable = [c["name"] for c in summary["columns"] if _usable(c, rows)]
    by_name = {name.strip().lower(): name for name in reversed(usable)}  # the first of a name
    for name in TARGET_NAMES:
        if name in by_name:
            return by_name[name]
    return usable[-1] if usable else None


def _usable(col: dict, rows: int) -> bool:
    name, kind, stats = col["name"], col["type"], col.get("stats") or {}
    if col.get("index") or kind not in ("numeric", "categorical", "boolean"):
        return False
    if col["missing"] > MOSTLY_MISSING * rows or FREE_TEXT.search(name) or is_id(name):
        return False
    if kind == "numeric":
        return stats.get("min") is not None and stats["min"] != stats["max"]
    return stats.get("distinct", 0) >= 2


def is_id(name: str) -> bool:
    """A column named as an identifier (ID_WORD, CAMEL_ID)."""
    name = name.strip()
    return bool(ID_WORD.search(name) or CAMEL_ID.search(name))
