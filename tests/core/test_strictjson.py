"""core.strictjson: the one guard every JSON reader shares (NaN/Infinity refused, nesting bounded)."""
from __future__ import annotations

import gc
import json
import math
import random
import struct

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


def _jsonl(lines: list[str], end: str = "\n") -> bytes:
    return "".join(line + end for line in lines).encode()


def test_loads_jsonl_reads_plain_lines_as_loads_reads_each():
    """msgspec's values are json's: exact big integers, -0.0, escapes, the last of repeated keys, floats to the bit."""
    rng = random.Random(3)
    floats = [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(20_000)]
    floats = [x for x in floats if math.isfinite(x)]
    lines = PLAIN + ['{"a": 1, "a": 2}', '"\\ud83d\\ude00 \u6c11"', "-9223372036854775809", "18446744073709551616", "1e-400",
                     "4.9e-324", "1E+2", json.dumps(floats), json.dumps([f"{x:.6g}" for x in floats]),
                     "[" + ",".join(f"{x:.3e}" for x in floats) + "]", "\t{} ", '{"x": 1}\r',
                     '{"x": "a\x85b\u2028c\u2029"}']  # line breaks to str.splitlines, not to a file's lines
    expected = [strictjson.loads(line) for line in lines]
    got = strictjson.loads_jsonl(_jsonl(lines))
    assert got == expected and repr(got) == repr(expected)
    assert strictjson.loads_jsonl(_jsonl(lines, "\r\n")) == expected
    assert strictjson.loads_jsonl(b"\n" + _jsonl(lines[:3], "\n\n")) == expected[:3]  # empty lines: none
    assert strictjson.loads_jsonl(b"") == [] and strictjson.loads_jsonl(b"\n\n") == []
    assert gc.isenabled()


@pytest.mark.parametrize("line", [" ", "\r", "{} {}", "{}{}", "{", "\ufeff{}", "[" * 101 + "]" * 101, "[" * 1000 + "]" * 1000, "1e400",
                                  "NaN", '{"x": Infinity}', '{"x": -Infinity}', '"\\ud800"', '"\x01"', '"a\tb"', "{}\x0c",
                                  "{}\r{}", "01", "[1,]"])
def test_loads_jsonl_hands_back_any_line_that_is_not_plain(line):
    """A line json would read otherwise than msgspec, or refuse: whitespace alone, two values on a line (also
    across a lone carriage return), too deep, NaN/Infinity, a lone surrogate, a control character."""
    assert strictjson.loads_jsonl(_jsonl(PLAIN[:3] + [line] + PLAIN[3:])) is None


@pytest.mark.parametrize("data", [b'{"a": "\xff"}\n', b'{"a": "\xed\xa0\x80"}\n', b'{"a": 1}\n{"b": 2', b'{"\xc3": 1}\n'])
def test_loads_jsonl_hands_back_what_is_not_utf8_or_cut_short(data):
    assert strictjson.loads_jsonl(data) is None
