"""core.strictjson: the one guard every JSON reader shares (NaN/Infinity refused, nesting bounded)."""
from __future__ import annotations

import gc
import json

import pytest

from core import strictjson

DEEP = "[" * 100_000 + "]" * 100_000  # 200 KB


@pytest.mark.parametrize("text", [DEEP, DEEP.encode(), '{"a": ' * 101 + "1" + "}" * 101])
def test_nesting_past_the_limit_is_refused_in_one_line(text):
    with pytest.raises(strictjson.TooDeep) as exc:
        strictjson.loads(text)
    assert str(exc.value) == "nested too deeply (more than 100 levels of arrays and objects)"
    with pytest.raises(strictjson.TooDeep):
        strictjson.loads(text, allow_nan=True)


def test_nesting_up_to_the_limit_and_brackets_inside_strings_are_accepted():
    assert strictjson.loads("[" * 100 + "]" * 100) == json.loads("[" * 100 + "]" * 100)
    quoted = json.dumps(["[" * 500 + '\\"{' * 200])
    assert strictjson.loads(quoted) == json.loads(quoted)
    assert strictjson.depth(quoted) == 1
    many = json.dumps([{"a": [1, {"b": []}]}] * 5000)  # many openers, shallow: counted exactly
    assert strictjson.depth(many) == 5 and len(strictjson.loads(many)) == 5000


def test_nan_is_refused_unless_allowed():
    with pytest.raises(ValueError, match="NaN is not a number JSON allows"):
        strictjson.loads('{"x": NaN}')
    assert strictjson.loads('{"x": 1}', allow_nan=True) == {"x": 1}


PLAIN = ['{"a": 1, "b": [1.5, "x\\u2028"]}', "[]", "3", '"s"', "null", '{"k": {"n": -0.0, "big": 123456789012345678901234567890}}',
         json.dumps([{"a": [1, {"b": []}]}] * 60)]  # many openers, shallow


def test_loads_lines_reads_plain_lines_as_loads_reads_each():
    assert strictjson.loads_lines(PLAIN) == [strictjson.loads(line) for line in PLAIN]
    assert strictjson.loads_lines(PLAIN + ["NaN"], allow_nan=True)[-1] != strictjson.loads_lines(PLAIN + ["NaN"], allow_nan=True)[-1]
    assert strictjson.loads_lines([]) == []
    assert gc.isenabled()


@pytest.mark.parametrize("line", [" {}", "{} ", "", "{} {}", "{", "\ufeff{}", "[" * 101 + "]" * 101, "1e400"])
def test_loads_lines_hands_back_any_line_that_is_not_plain(line):
    assert strictjson.loads_lines(PLAIN[:3] + [line] + PLAIN[3:]) is None


def test_loads_lines_refuses_nan_unless_allowed():
    assert strictjson.loads_lines(PLAIN + ["NaN"]) is None
    assert strictjson.loads_lines(PLAIN + ['{"x": Infinity}']) is None
