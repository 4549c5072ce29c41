"""Run JSON under abuse: wherever a hostile value sits in a run, the 400 names its field.

test_server_runs.py has the fixed cases and a property test that no body gives a 500; this one
puts each kind of value JSON cannot carry portably at a random place in an otherwise good run.
"""

import json
import uuid

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from server.jsonbody import MAX_ITEMS

PLACEHOLDER = "__hostile__"

# (raw JSON text, the key it adds to the field's path, or None when the value itself is named)
HOSTILE = [
    ("NaN", None), ("Infinity", None), ("-Infinity", None),
    ("1e999", None), ("-2.5e400", None),  # floats that overflow to infinity
    ("1" + "0" * 400, None), ("-" + "9" * 309, None),  # integers past a double's range
    ("1" + "0" * 5000, None),  # past int()'s 4,300-digit limit as well
    ('"\\ud800"', None), ('"a\\udfffb"', None),  # lone surrogates: UTF-8 cannot store them
    ('{"a\\u0000b": 1}', "a\x00b"), ('{"\\udc00": 1}', "\udc00"),  # keys
    ("[" + ",".join(["0"] * (MAX_ITEMS + 1)) + "]", None),  # an array over MAX_ITEMS
]

keys = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=8).filter(lambda k: k != PLACEHOLDER)
steps = st.lists(st.one_of(keys, st.integers(0, 2)), max_size=5)


def nest(path: list, leaf):
    """The value with `leaf` at `path` (keys are objects, integers are arrays padded with 0)."""
    for step in reversed(path):
        leaf = {step: leaf} if isinstance(step, str) else [0] * step + [leaf]
    return leaf


def dotted(parts: list) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


@hsettings(max_examples=150, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(top=st.sampled_from(["config", "metrics", "extra", "env", "adapter"]), path=steps,
       hostile=st.sampled_from(HOSTILE))
def test_hostile_value_anywhere_is_a_400_naming_its_field(client, top, path, hostile):
    raw, key = hostile
    run = {"id": str(uuid.uuid4()), "kind": "selftest", top: nest(path, PLACEHOLDER)}
    if not isinstance(run[top], dict):  # these fields must be objects: start with a key
        path = ["x", *path]
        run[top] = nest(path, PLACEHOLDER)
    body = json.dumps(run).replace(json.dumps(PLACEHOLDER), raw)
    r = client.post("/api/runs", content=body.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    expected = dotted([top, *path] + ([key] if key is not None else []))
    assert r.json()["error"]["field"] == expected
    assert client.get(f"/api/runs/{run['id']}").status_code == 404  # nothing stored


@pytest.mark.parametrize("field, value", [
    ("id", "e09c7b88-e5e5-4715-8e8c-e1c6ef4a03f\x00"), ("kind", "selftest\x00"), ("backend", "web\x00gpu"),
    ("kind", "\ud800"), ("backend", "x" * 10_000),
])
def test_nul_and_surrogates_in_named_fields_are_400(client, field, value):
    run = {"id": str(uuid.uuid4()), "kind": "selftest", field: value}
    r = client.post("/api/runs", content=json.dumps(run).encode(),
                    headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["field"] == field


def test_largest_finite_numbers_are_stored_and_read_back(client):
    # The edge of what a browser can read: 1.7976931348623157e308 and an integer just under it.
    body = ('{"id": "%s", "kind": "selftest", "metrics": {"f": 1.7976931348623157e308, "i": %d}}'
            % (uuid.uuid4(), 10**308))
    r = client.post("/api/runs", content=body.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 201, r.text
    assert r.json()["metrics"] == {"f": 1.7976931348623157e308, "i": 10**308}
