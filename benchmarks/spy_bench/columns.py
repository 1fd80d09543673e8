"""SPY-Bench's evaluated rows read into numpy columns, and checked (benchmarks.spy_bench.metrics counts over them).

A bad row is refused with `MetricsError` naming the row and the field (`validate_rows`), before anything is
counted: upstream's `assert`s and crashes, as metrics.py's docstring lists them.
"""
from __future__ import annotations

from collections import defaultdict
from itertools import chain, compress, count, repeat
from operator import is_not, itemgetter

import numpy as np

from .upstream import ABS_PRIV_LABELS, REJECT, RESPOND


class MetricsError(ValueError):
    """Evaluated rows the metrics cannot count (a bad file), with the row and the reason."""


def _is_key(value) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def validate_rows(rows: list[dict], k: str = "eval_resp") -> None:
    """Refuse, with the row number and the field, every row upstream's `cal_metrics` would assert on,
    crash on, or count as something it is not: a row that is not an object; a missing field; a label
    that is not a non-empty string or is a0_safe; a benchmark_id or scenario id that is not a string
    or an integer; is_privacy (or the scenario's) not the integer 0 or 1; instruction 0 in a
    non-privacy scenario; the two rows of a pair carrying different labels (upstream asserts it for
    the pairs it counts; here whatever their verdicts). MetricsError otherwise; nothing is counted."""
    pair_labels: dict = {}  # pair key -> (row number, label)
    for n, row in enumerate(rows, 1):
        _check_row(row, n, k)
        scenario = row.get("scenario")
        if scenario is None:
            key: tuple = (row["benchmark_id"],)
        elif scenario["is_privacy"] == 1:
            key = (row["benchmark_id"], scenario["id"])
        else:
            continue
        first = pair_labels.setdefault(key, (n, row["label"]))
        if first[1] != row["label"]:
            where = f"in scenario {key[1]!r}" if len(key) == 2 else "without a scenario"
            raise MetricsError(f"row {n}: label {row['label']!r}, but row {first[0]} of the same pair (benchmark_id "
                               f"{row['benchmark_id']!r} {where}) has label {first[1]!r}; the two rows of a pair ask about one label.")


def _check_row(row, n: int, k: str) -> None:
    if not isinstance(row, dict):
        raise MetricsError(f"row {n}: expected an object.")
    for key in ("benchmark_id", "label", "is_privacy"):
        if key not in row:
            raise MetricsError(f"row {n}: missing {key!r}.")
    if k not in row:
        raise MetricsError(f"row {n}: missing {k!r} (the judge's verdict: respond, reject or anything else).")
    label = row["label"]
    if not isinstance(label, str) or not label.strip():
        raise MetricsError(f"row {n}: label must be a VISPR attribute id as a string (e.g. \"a4_gender\"), "
                           f"not {type(label).__name__} {str(label)[:40]!r}.")
    if label == "a0_safe":
        raise MetricsError(f"row {n}: label a0_safe is not counted by SPY-Bench (upstream asserts it away).")
    if not _is_key(row["benchmark_id"]):
        raise MetricsError(f"row {n}: benchmark_id must be a string or an integer, not {type(row['benchmark_id']).__name__}.")
    if type(row["is_privacy"]) is not int or row["is_privacy"] not in (0, 1):
        raise MetricsError(f"row {n}: is_privacy must be 0 or 1.")
    scenario = row.get("scenario")
    if scenario is not None:
        if (not isinstance(scenario, dict) or type(scenario.get("is_privacy")) is not int or scenario["is_privacy"] not in (0, 1)
                or not _is_key(scenario.get("id"))):
            raise MetricsError(f"row {n}: scenario must be an object with id (a string) and is_privacy 0 or 1.")
        if row["is_privacy"] == 0 and scenario["is_privacy"] == 0:
            raise MetricsError(f"row {n}: instruction 0 in a non-privacy scenario is not a SPY-Bench row.")


# --- the counts, over columns (issue 37) -----------------------------------------------------------
# Each row is read once into a few numpy columns (its verdict, its label, its instruction, its scenario's
# kind, its item, its pair); every count is then a sum over boolean columns, and a pair is two row numbers
# in a slot array. Per item, the same columns are summed by item (np.bincount), which is what the
# bootstrap draws from. The counts, hence every score, are the same integers as upstream's lists' lengths.
# The columns are also the check: every column's types and values are checked in bulk, and only when
# something is off are the rows checked one by one (`validate_rows`), which names the first bad row.

_VERDICT = {RESPOND: 0, REJECT: 1}  # anything else: 2, an exception
_ABSOLUTE = frozenset(ABS_PRIV_LABELS)
ROW_COUNTS = ("total", "exception", "abs_all", "abs_exp", "acc_all", "acc_exp", "conf_all", "conf_exp",
              "comp1_all", "comp1_exp", "comp0_all", "comp0_exp")
PAIR_COUNTS = ("n1", "n2", "n3", "n4", "ics_exp", "ics_all", "abs_ics_all", "abs_ics_exp")
SCENE_PAIR_COUNTS = ("sc1", "sc2", "sc3", "sc4", "sc_exp", "sc_all")
_ABSENT = object()  # the scenario id of a row without a scenario
_NO_SCENARIO = {"id": _ABSENT, "is_privacy": 0}
_PER_ROW = ("row", "verdict", "label", "absolute", "is_privacy", "item", "has_scenario", "scenario_is_privacy", "scenario", "pair")


class _Unusual(Exception):
    """Rows the bulk check does not vouch for: `validate_rows` then names the bad row (or reads them one by one)."""


def _codes(values: list, table: dict, default: int) -> np.ndarray:
    """`table[value]` for each value (`default` when absent), by == as upstream compares (a value that
    is a JSON list or object, unhashable, is simply not in the table)."""
    try:
        return np.fromiter(map(table.get, values, repeat(default)), dtype=np.int8, count=len(values))
    except TypeError:
        return np.array([next((c for key, c in table.items() if v == key), default) for v in values], dtype=np.int8)


def _first_codes(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes 0.. of the integers `v` in order of first appearance, and the distinct values."""
    if not v.size:
        return np.zeros(0, dtype=np.int64), v
    low, high = int(v.min()), int(v.max())
    if high - low < 4 * v.size + 1024:  # a slot per value: no sort of the rows
        dense, distinct = v - low, np.arange(low, high + 1)
    else:
        distinct, dense = np.unique(v, return_inverse=True)
        dense = dense.reshape(-1)
    first = np.full(distinct.size, v.size, dtype=np.int64)
    np.minimum.at(first, dense, np.arange(v.size))
    present = np.flatnonzero(first < v.size)
    order = present[np.argsort(first[present])]
    rank = np.empty(distinct.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank[dense], distinct[order]


def _factorize(values: list, types: set | None = None) -> tuple[np.ndarray, list]:
    """Dense codes 0.. of `values` in order of first appearance (equal values by ==, as dict keys), and
    the distinct values."""
    if values and (set(map(type, values)) if types is None else types) == {int}:
        try:
            codes, distinct = _first_codes(np.fromiter(values, dtype=np.int64, count=len(values)))
            return codes, distinct.tolist()
        except OverflowError:
            pass
    seen: dict = {}  # value -> the row it first appears at: one pass
    first = np.fromiter(map(seen.setdefault, values, count()), dtype=np.int64, count=len(values))
    return _numbered(seen, first), list(seen)


def _numbered(first: dict, firsts) -> np.ndarray:
    """Dense codes 0.. of the values read as `first.setdefault(value, row)` (`firsts`: what each row
    got, a list or an array): the values in `first`'s order, that of first appearance."""
    if not isinstance(firsts, np.ndarray):
        firsts = np.fromiter(firsts, dtype=np.int64, count=len(firsts))
    code_of_row = np.zeros(len(firsts), dtype=np.int64)  # a value's first row -> its code
    code_of_row[np.fromiter(first.values(), dtype=np.int64, count=len(first))] = np.arange(len(first))
    return code_of_row[firsts]


def _small_ints(values: list, top: int) -> np.ndarray:
    """`values`, integers known to be below `top`, as a column: through a bytearray (a C-level copy, a
    third of np.fromiter's time; ValueError for a value outside 0..255) when `top` <= 256."""
    if top <= 256:
        return np.frombuffer(bytearray(values), dtype=np.uint8)
    return np.fromiter(values, dtype=np.int64, count=len(values))


def _only(types: list, allowed: type) -> bool:
    """Whether every entry of `types` is `allowed` (list.count: identity, a fraction of set()'s cost)."""
    return types.count(allowed) == len(types)


class Columns:
    """The rows as numpy columns. `check` True: read in one pass (`_read_checked`) and checked in bulk,
    _Unusual (or the TypeError, KeyError, ValueError, OverflowError of a conversion) for anything
    `validate_rows` might refuse or any row that pass does not read (a scenario that is null or not an
    object); False: rows `validate_rows` passed, read by the general reader (`_read`). Both give the
    same columns. `pair`: the pair of a row without a scenario (its item) or in a privacy scenario (its
    item and scenario), -1 for a row in a non-privacy scenario."""

    def __init__(self, rows: list[dict], k: str, check: bool = True):
        n = len(rows)
        self.row = np.arange(n)  # the rows' numbers in the whole file (a group keeps them)
        (self._read_checked if check else self._read)(rows, k)
        width = max(len(self.scenario_ids), 1)
        scene_pair = np.where(self.scenario_is_privacy == 1, self.n_items + self.item * width + self.scenario, -1)
        self.pair = np.where(self.has_scenario, scene_pair, self.item)
        self.n_pairs = self.n_items * (width + 1)
        if self.n_pairs > 4 * n + 1024:  # many scenarios: number the pairs there are
            paired = self.pair >= 0
            self.pair[paired], distinct = _first_codes(self.pair[paired])
            self.n_pairs = distinct.size
        if check:  # the two rows of a pair carry one label
            paired = np.flatnonzero(self.pair >= 0)
            label_of = np.zeros(self.n_pairs, dtype=np.int64)
            label_of[self.pair[paired]] = self.label[paired]
            if np.any(label_of[self.pair[paired]] != self.label[paired]):
                raise _Unusual

    def _read_checked(self, rows: list[dict], k: str) -> None:
        """Every field of every row in one pass (issue 37: the pass is bound by memory, each row's dicts
        and values cache misses, so each is touched once, and all its fields read while it is in cache):
        one `itemgetter` of four fields a row and one of its scenario's two, flattened with `chain` and
        taken in turn by `zip` (zip's left-to-right order), all of it C-level. Labels and scenario ids
        are coded as they are read (a `defaultdict` numbering each new value, in order of first
        appearance), the verdict too; a row without "scenario" reads `_NO_SCENARIO` (id `_ABSENT`,
        coded 0, the scenario column's -1). A missing field raises KeyError, a row or a scenario that is not an object (null
        included) TypeError, and the general reader takes over. Then every column's types and values
        are checked as `validate_rows` checks them; _Unusual when any is off. Types are checked row by
        row where a wrong one could pass for a right one (True == 1, 1.0 == 1: is_privacy, the
        scenario's, benchmark_id); labels and scenario ids on their distinct values, as only strings
        equal strings (where an integer scenario id is among them, every row's scenario id is read again)."""
        label_of: defaultdict = defaultdict(count().__next__)  # label -> its code
        scene_of: defaultdict = defaultdict(count(1).__next__)  # scenario id -> its code
        scene_of[_ABSENT] = 0
        fields = chain.from_iterable(map(itemgetter("label", k, "is_privacy", "benchmark_id"), rows))
        scene = chain.from_iterable(map(itemgetter("id", "is_privacy"), map(dict.get, rows, repeat("scenario"), repeat(_NO_SCENARIO))))
        flat = list(chain.from_iterable(zip(map(label_of.__getitem__, fields), map(_VERDICT.get, fields, repeat(2)), fields, fields,
                                            map(scene_of.__getitem__, scene), scene)))
        is_privacy, ids, scene_is_privacy = flat[2::6], flat[3::6], flat[5::6]
        id_types = set(map(type, ids))
        self.labels, self.scenario_ids = list(label_of), list(scene_of)[1:]
        scene_types = set(map(type, self.scenario_ids))
        if scene_types - {str}:  # an integer id, which True or 1.0 could pass for: every row's checked
            scene_types = set(map(type, map(itemgetter("id"), filter(None, map(dict.get, rows, repeat("scenario"))))))
        if not (id_types <= {int, str} and _only(list(map(type, is_privacy)), int) and _only(list(map(type, scene_is_privacy)), int)
                and scene_types <= {int, str} and _only(list(map(type, self.labels)), str)
                and all(label.strip() and label != "a0_safe" for label in self.labels)):
            raise _Unusual
        self.label = _small_ints(flat[0::6], len(self.labels))
        self.verdict = _small_ints(flat[1::6], 3).view(np.int8)
        self.absolute = np.array([label in _ABSOLUTE for label in self.labels], dtype=bool)[self.label]
        self.is_privacy = _small_ints(is_privacy, 256).view(np.int8)  # ValueError outside 0..255: refused below too
        self.item, items = _factorize(ids, id_types)
        self.n_items = len(items)
        self.scenario = _small_ints(flat[4::6], len(scene_of)).astype(np.int64) - 1
        self.has_scenario = self.scenario != -1
        scene_is_privacy = _small_ints(scene_is_privacy, 256).view(np.int8)
        self.scenario_is_privacy = np.where(self.has_scenario, scene_is_privacy, np.int8(-1))
        if (np.any((scene_is_privacy != 0) & (scene_is_privacy != 1)) or np.any((self.is_privacy != 0) & (self.is_privacy != 1))
                or np.any((self.scenario_is_privacy == 0) & (self.is_privacy == 0))):
            raise _Unusual

    def _read(self, rows: list[dict], k: str) -> None:
        """Rows `validate_rows` passed, whatever their scenario (null included): a `map` of a C-level
        getter a column, flattened with `chain` (a comprehension costs several times as much a row)."""
        n = len(rows)
        scenarios = list(map(dict.get, rows, repeat("scenario")))
        flat = list(chain.from_iterable(map(itemgetter("benchmark_id", "label", "is_privacy", k), rows)))
        ids, labels, is_privacy = flat[0::4], flat[1::4], flat[2::4]
        self.verdict = _codes(flat[3::4], _VERDICT, 2)
        self.label, self.labels = _factorize(labels, set())
        self.absolute = np.array([label in _ABSOLUTE for label in self.labels], dtype=bool)[self.label]
        self.is_privacy = np.fromiter(is_privacy, dtype=np.int8, count=n)
        self.item, items = _factorize(ids)
        self.n_items = len(items)
        self.has_scenario = np.fromiter(map(is_not, scenarios, repeat(None)), dtype=bool, count=n)
        with_scenario = list(compress(scenarios, self.has_scenario))
        fields = list(chain.from_iterable(map(itemgetter("is_privacy", "id"), with_scenario)))
        self.scenario_is_privacy = np.full(n, -1, dtype=np.int8)
        self.scenario_is_privacy[self.has_scenario] = np.fromiter(fields[0::2], dtype=np.int8, count=len(with_scenario))
        self.scenario = np.full(n, -1, dtype=np.int64)
        self.scenario[self.has_scenario], self.scenario_ids = _factorize(fields[1::2])

    def group(self, mask: np.ndarray) -> Columns:
        """The rows `mask` picks, their items numbered again in order of first appearance."""
        g = object.__new__(Columns)
        g.__dict__.update(self.__dict__)
        for name in _PER_ROW:
            setattr(g, name, getattr(self, name)[mask])
        g.item, items = _first_codes(g.item)
        g.n_items = items.size
        return g


def read_columns(rows: list[dict], k: str) -> Columns:
    """The rows checked (as `validate_rows` checks them) and read into columns."""
    try:
        return Columns(rows, k)
    except (_Unusual, TypeError, KeyError, ValueError, OverflowError):
        validate_rows(rows, k)  # names the first bad row
        return Columns(rows, k, check=False)
