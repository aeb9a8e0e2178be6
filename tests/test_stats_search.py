"""core.scan.stats_search: one column's bounds located by substring search must equal the core's JSON
parse, on every corpus table and on documents built to break it; core.scan.stats.num_records, the one
numRecords reader, agrees with what the search reads on its way."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from corpus_paths import CORPUS, tables_with_stats
from helpers import add, commit_info, mapped_field, metadata, protocol, write_commit

import deltaexplore as dx
from deltaexplore.core.scan.stats import column_bounds, num_records
from deltaexplore.core.scan.stats_columns import stats_columns
from deltaexplore.core.scan.stats_parse import stats_for_adds
from deltaexplore.core.scan.stats_search import search_bounds


@pytest.fixture(params=["kernel", "numpy"])
def search(request, monkeypatch):
    """Run a test with the compiled search and with the polars/numpy one."""
    from deltaexplore.core.scan import stats_search

    if request.param == "numpy":
        monkeypatch.setattr(stats_search, "KERNEL", None)
    elif stats_search.KERNEL is None:
        pytest.skip("the kernel is not built")
    return request.param


def _compare(snap) -> int:
    adds = snap.add_actions()
    used = 0
    for col in stats_columns(snap.schema, snap.column_mapping_mode, snap.partition_columns, None):
        fast = search_bounds(snap, adds, col)
        if fast is None:
            continue
        used += 1
        core = stats_for_adds(snap, adds, [col.name])
        for key, prefix in (("min", "min."), ("max", "max."), ("null_count", "null_count.")):
            expected = core.column(prefix + col.name).combine_chunks()
            got = getattr(fast, key)
            assert got.to_pylist() == expected.cast(got.type).to_pylist(), (col.name, key)
    return used


def _tables():
    return [pytest.param(t, id=t["id"]) for t in tables_with_stats()]


@pytest.mark.corpus
@pytest.mark.parametrize("row", _tables())
def test_corpus_fast_bounds_equal_core(search, row):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        snap = dx.open_table(str(CORPUS / row["table_root"])).snapshot()
        _compare(snap)


SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "s", "type": "string", "nullable": True, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {
            "name": "nested",
            "type": {"type": "struct", "fields": [{"name": "id2", "type": "long", "nullable": True, "metadata": {}}]},
            "nullable": True,
            "metadata": {},
        },
    ],
}


def test_hostile_documents(search, tmp_path):
    docs = [
        # usual order
        {
            "numRecords": 3,
            "minValues": {"id": 1, "s": "a,b}", "ts": "2024-01-01T00:00:00.000Z", "nested": {"id2": 5}},
            "maxValues": {"id": 9, "s": 'q"uote', "ts": "2024-01-02T00:00:00.000Z", "nested": {"id2": 6}},
            "nullCount": {"id": 0, "s": 1, "ts": 0, "nested": {"id2": 0}},
        },
        # other object order, id absent from minValues/maxValues (all null)
        {"numRecords": 2, "nullCount": {"id": 2, "s": 0}, "maxValues": {"s": "z"}, "minValues": {"s": "y"}},
        # a string value that mentions the key, and a long string value
        {
            "numRecords": 1,
            "minValues": {"s": '"id":5 ' + "x" * 100, "id": 4},
            "maxValues": {"s": "zz", "id": 4},
            "nullCount": {"id": 0},
        },
        # unicode escapes
        {
            "numRecords": 1,
            "minValues": {"id": -7, "s": "\u00e9t\u00e9"},
            "maxValues": {"id": 7, "s": "\u00e9t\u00e9"},
            "nullCount": {"id": 0, "s": 0},
        },
    ]
    texts = [json.dumps(d, separators=(",", ":"), ensure_ascii=(i != 3)) for i, d in enumerate(docs)]
    texts.append(json.dumps(docs[0], indent=1))  # pretty-printed: headers with spaces
    texts.append("{}")
    actions = [commit_info("WRITE"), protocol(), metadata(schema=SCHEMA)]
    actions += [add(f"f{i}.parquet", 1, stats=t) for i, t in enumerate(texts)]
    actions.append(add("nostats.parquet", 1))
    write_commit(tmp_path, 0, actions)
    snap = dx.open_table(str(tmp_path)).snapshot()
    assert _compare(snap) == 4  # id, s, ts and nested.id2 (its leaf name is unique)
    col = next(c for c in stats_columns(snap.schema, "none", [], None) if c.name == "id")
    got = search_bounds(snap, snap.add_actions(), col)
    assert got is not None
    assert got.min.to_pylist() == [1, None, 4, -7, 1, None, None]
    assert got.null_count.to_pylist() == [0, 2, 0, 0, 0, None, None]


TYPED_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": n, "type": t, "nullable": True, "metadata": {}}
        for n, t in [
            ("i", "integer"),
            ("b", "byte"),
            ("f", "float"),
            ("d", "double"),
            ("dec", "decimal(10,2)"),
            ("wide", "decimal(30,4)"),
            ("day", "date"),
            ("tsn", "timestamp_ntz"),
            ("ok", "boolean"),
            ("s", "string"),
            ("name", "string"),
        ]
    ]
    + [
        {
            "name": "outer",
            "type": {
                "type": "struct",
                "fields": [
                    {"name": "s", "type": "string", "nullable": True, "metadata": {}},
                    {"name": "leaf", "type": "long", "nullable": True, "metadata": {}},
                ],
            },
            "nullable": True,
            "metadata": {},
        }
    ],
}


def _doc(lo: dict, hi: dict, nulls: dict, records: int = 10, **top) -> str:
    return json.dumps(
        {"numRecords": records, **top, "minValues": lo, "maxValues": hi, "nullCount": nulls},
        separators=(",", ":"),
        ensure_ascii=False,
    )


@pytest.mark.parametrize(("block", "view_slice_bits"), [(1 << 16, 30), (2, 30), (5, 4)])
def test_typed_and_odd_documents_equal_core(search, tmp_path, monkeypatch, block, view_slice_bits):
    """Every type the fast path casts, nested leaves, and documents built to trip the search:
    whitespace, values that do not cast (int overflow, exponents, decimals with more digits
    than the scale), keys in an unknown object, nulls, truncated and escaped strings. Also in
    tiny blocks of values per numpy pass (block boundaries anywhere), and with the text buffer
    cut in 16-byte slices for string views (as a buffer over 2 GiB is)."""
    from deltaexplore.core.scan import stats_search

    monkeypatch.setattr(stats_search, "BLOCK", block)
    monkeypatch.setattr(stats_search, "VIEW_SLICE_BITS", view_slice_bits)
    full_lo = {
        "i": -5,
        "b": 1,
        "f": 0.1,
        "d": -1.5e300,
        "dec": 4.96,
        "wide": 12345678901234567890.1234,
        "day": "2024-02-29",
        "tsn": "2024-01-01T00:00:00.000",
        "ok": False,
        "s": "\u00e9t\u00e9 caf\u00e9",
        "outer": {"s": "x", "leaf": 1},
    }
    full_hi = dict(full_lo, i=7, f=3.4028234e38, d=1e-300, dec=12345678.91, s="z" * 32 + "\ufffd", ok=True)
    full_nulls = {k: 0 for k in full_lo if k != "outer"} | {"outer": {"s": 1, "leaf": 0}}
    texts = [
        _doc(full_lo, full_hi, full_nulls),
        _doc(full_lo, full_hi, full_nulls).replace('"i":-5', '"i": -5'),  # whitespace after the colon
        _doc(dict(full_lo, b=300), full_hi, full_nulls),  # byte overflow: the core decides
        _doc(dict(full_lo, i=1e3), full_hi, full_nulls),  # exponent in an integer column
        _doc(dict(full_lo, dec=4.965), full_hi, full_nulls),  # more digits than the scale
        _doc(dict(full_lo, s='q"uote\\'), dict(full_hi, s="line\nbreak"), full_nulls),  # escapes
        _doc({"i": None, "s": None}, {"i": None}, {"i": 10, "s": 10}),  # nulls, missing keys
        _doc({"i": 1}, {"i": 2}, {"i": 0}, extra={"i": 99}),  # the key in an unknown object
        json.dumps({"nullCount": {"i": 3}, "numRecords": 3, "maxValues": {"i": 9}, "minValues": {"i": 4}}),
        json.dumps({"minValues": {"i": 4}, "maxValues": {"i": 5}, "nullCount": {"i": 0}, "numRecords": 4}),
        _doc({"i": 1}, {"i": 2}, {"i": 0}, records=-1).replace('"numRecords":-1', '"numRecords":"7"'),  # quoted count
        "{}",
        "",
    ]
    actions = [commit_info("WRITE"), protocol(), metadata(schema=TYPED_SCHEMA)]
    actions += [add(f"f{i}.parquet", 1, stats=t) for i, t in enumerate(texts)]
    actions.append(add("nostats.parquet", 1))
    write_commit(tmp_path, 0, actions)
    snap = dx.open_table(str(tmp_path)).snapshot()
    # every leaf but s and outer.s (the name `s` is not unique in the schema) takes the fast path
    assert _compare(snap) == 11
    cols = {c.name: c for c in stats_columns(snap.schema, "none", [], None)}
    assert search_bounds(snap, snap.add_actions(), cols["outer.s"]) is None
    assert search_bounds(snap, snap.add_actions(), cols["s"]) is None
    got = column_bounds(snap, snap.add_actions(), ["i"])["i"]
    assert got.min.to_pylist()[:3] == [-5, -5, -5]
    assert got.min.to_pylist()[6:10] == [None, 1, 4, 4]
    assert got.null_count.to_pylist()[6:9] == [10, 0, 3]
    # numRecords read by the search on its way (the quoted and missing ones by num_records)
    expected_records = stats_for_adds(snap, snap.add_actions(), ["i"]).column("num_records").to_pylist()
    assert got.num_records.to_pylist() == num_records(snap.add_actions()).to_pylist()
    assert [r for r, e in zip(got.num_records.to_pylist(), expected_records) if e is not None] == [
        e for e in expected_records if e is not None
    ]
    everyone = num_records(snap.add_actions()).to_pylist()
    for rows in ([0, 3, 6, 7, len(everyone) - 1], [len(everyone) - 1], list(range(len(everyone))), []):
        picked = num_records(snap.add_actions(), np.array(rows, dtype=np.int64)).to_pylist()
        assert picked == [everyone[i] for i in rows], rows


def test_column_mapping_physical_names_equal_core(search, tmp_path):
    schema = {
        "type": "struct",
        "fields": [
            mapped_field("id", "long", 1, "col-a1"),
            mapped_field("name", "string", 2, "col-b2"),
        ],
    }
    texts = [
        _doc({"col-a1": 1, "col-b2": "a"}, {"col-a1": 5, "col-b2": "b"}, {"col-a1": 0, "col-b2": 1}),
        # a logical name in the stats is not the column's (the core ignores it too)
        _doc({"id": 1}, {"id": 2}, {"id": 0}),
    ]
    actions = [
        commit_info("WRITE"),
        protocol(2, 5),
        metadata(schema=schema, configuration={"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"}),
    ]
    actions += [add(f"f{i}.parquet", 1, stats=t) for i, t in enumerate(texts)]
    write_commit(tmp_path, 0, actions)
    snap = dx.open_table(str(tmp_path)).snapshot()
    assert _compare(snap) == 2
    col = next(c for c in stats_columns(snap.schema, snap.column_mapping_mode, [], None) if c.name == "id")
    got = search_bounds(snap, snap.add_actions(), col)
    assert got is not None and got.min.to_pylist() == [1, None]


def test_many_rows_in_parallel_chunks_equal_core(search, tmp_path, monkeypatch):
    """Several chunks (one per commit), sliced into runs searched by the thread pool; long
    strings need wider windows."""
    from deltaexplore.core.scan import stats_search

    monkeypatch.setattr(stats_search, "PARALLEL_ROWS", 10)
    monkeypatch.setattr(stats_search, "BLOCK", 37)
    monkeypatch.setattr(stats_search, "RUN_ROWS", 61)  # chunks sliced into runs of 61 files
    write_commit(tmp_path, 0, [commit_info("WRITE"), protocol(), metadata(schema=SCHEMA)])
    for v in range(1, 4):
        docs = [
            _doc(
                {"id": v * 1000 + i, "s": "p" * (i % 300), "ts": "2024-01-01T00:00:00.000Z"},
                {"id": v * 1000 + i + 5, "s": "q" * (i % 300) + "\u00e9", "ts": f"2024-01-0{1 + i % 9}T10:11:12.123456Z"},
                {"id": i % 3, "s": 0, "ts": 0},
                records=i,
            )
            for i in range(200)
        ]
        write_commit(tmp_path, v, [add(f"v{v}_{i}.parquet", 1, stats=d) for i, d in enumerate(docs)])
    snap = dx.open_table(str(tmp_path)).snapshot()
    assert snap.add_actions().column("stats").num_chunks >= 1
    assert _compare(snap) == 4
    adds = snap.add_actions()
    assert num_records(adds).to_pylist() == [i for _ in range(1, 4) for i in range(200)]
    rows = np.array([0, 199, 200, 401, 599], dtype=np.int64)  # across the commits' chunks
    assert num_records(adds, rows).to_pylist() == [0, 199, 0, 1, 199]


# -- the compiled kernel against the numpy/polars search -------------------------------------


def _fuzz_docs(seed: int, count: int) -> list[str]:
    """Stats documents built to trip a byte search: keys in any object order, missing and
    doubled, spaces, escapes and quotes in strings, the key's name inside string values,
    prefixes of the headers, nested objects, truncated and empty documents, non-ASCII text."""
    import random

    rng = random.Random(seed)
    names = ["id", "s", "ts", "nested", "idx", "i", "mind", "n"]

    def value() -> object:
        return rng.choice(
            [
                rng.randint(-(10**12), 10**12),
                rng.random() * 1e6,
                None,
                True,
                "",
                '"id":5',
                "a,b}]",
                'q"uote\\',
                "\u00e9t\u00e9 " * rng.randint(0, 5),
                "x" * rng.randint(0, 120),
                '"minValues":{',
                "2024-01-01T00:00:00.000Z",
            ]
        )

    def obj() -> dict:
        keys = rng.sample(names, rng.randint(0, len(names)))
        out: dict = {k: value() for k in keys}
        if rng.random() < 0.2:
            out["nested"] = {"id2": value(), "id": value()} if rng.random() < 0.3 else {"id2": value()}
        return out

    docs = []
    for _ in range(count):
        parts = [("numRecords", rng.randint(0, 10**9))] if rng.random() < 0.9 else []
        objects = ["minValues", "maxValues", "nullCount"]
        rng.shuffle(objects) if rng.random() < 0.2 else None
        parts += [(o, obj()) for o in objects if rng.random() < 0.93]
        if rng.random() < 0.1:
            parts.insert(rng.randint(0, len(parts)), ("tightBounds", rng.random() < 0.5))
        if rng.random() < 0.05:
            parts.append(("extra", obj()))
        text = json.dumps(
            dict(parts), separators=(",", ":") if rng.random() < 0.9 else (", ", ": "), ensure_ascii=rng.random() < 0.5
        )
        if rng.random() < 0.05:
            text = text[: rng.randint(0, len(text))]  # truncated
        if rng.random() < 0.03 and '"minValues":{}' not in text:
            text = text.replace('"minValues":{', '"minValues":{"id":1,', 1)  # doubled key
        docs.append(text)
    return docs


def _c_compiler() -> str | None:
    import shutil
    import sysconfig

    cc = sysconfig.get_config_var("CC")
    return shutil.which(cc.split()[0] if cc else "cc")


@pytest.mark.skipif(__import__("os").environ.get("DELTAEXPLORE_NO_KERNEL") is not None, reason="kernel switched off")
def test_kernel_is_built():
    """Where a C compiler exists the README's setup compiles the kernel (setup.py); a broken
    build would silently fall back to the slower search."""
    from deltaexplore.core.scan import stats_search

    if _c_compiler() is None:
        pytest.skip("no C compiler: the package runs the polars/numpy search")
    assert stats_search.KERNEL is not None


@pytest.fixture(scope="module", params=["built", "portable"])
def kernel(request, tmp_path_factory):
    """The kernel as installed (SSE2 on x86-64), and compiled again without SSE2 (the portable
    byte loops other CPUs run)."""
    from deltaexplore.core.scan import stats_search

    if stats_search.KERNEL is None:
        pytest.skip("the kernel is not built")
    if request.param == "built":
        return stats_search.KERNEL
    import importlib.util
    import subprocess
    import sysconfig
    from pathlib import Path

    cc = _c_compiler()
    if cc is None:
        pytest.skip("no C compiler")
    source = Path(stats_search.__file__).with_name("_stats_kernel.c")
    out = tmp_path_factory.mktemp("portable") / ("_stats_kernel" + sysconfig.get_config_var("EXT_SUFFIX"))
    include = sysconfig.get_paths()["include"]
    subprocess.run([cc, "-O2", "-U__SSE2__", "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(out)], check=True)
    spec = importlib.util.spec_from_file_location("_stats_kernel", out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kernel_locates_what_the_numpy_search_locates(tmp_path, monkeypatch, seed, kernel):
    """Per file, the compiled `locate` and the polars/numpy search agree on which values exist,
    where each starts and ends, and which files go to the core; and the bounds of both paths
    equal the core's parse."""
    from deltaexplore.core.scan import stats_search

    docs = _fuzz_docs(seed, 1500)
    actions = [commit_info("WRITE"), protocol(), metadata(schema=SCHEMA)]
    actions += [add(f"f{i}.parquet", 1, stats=t) for i, t in enumerate(docs)]
    actions.append(add("nostats.parquet", 1))
    write_commit(tmp_path, 0, actions)
    snap = dx.open_table(str(tmp_path)).snapshot()
    cols = {c.name: c for c in stats_columns(snap.schema, "none", [], None)}
    runs = stats_search._runs(snap.add_actions().column("stats"), 1, 997)
    assert len(runs) >= 2
    seen: list[bool] = []
    for name in ("id", "ts", "nested.id2"):
        col = cols[name]
        needle = stats_search._needle(col.physical[-1])
        for run in runs:
            monkeypatch.setattr(stats_search, "KERNEL", kernel)
            at_k, values_k, redo_k = stats_search._locate(run, needle, col)
            monkeypatch.setattr(stats_search, "KERNEL", None)
            at_p, values_p, redo_p = stats_search._locate(run, needle, col)
            # the numpy path sends documents with braces inside strings to the core: the kernel
            # follows strings exactly (a subset of rows to redo); elsewhere both agree
            assert not (redo_k & ~redo_p).any(), name
            both = ~redo_p
            assert (at_k[both] == at_p[both]).all(), name
            assert (at_k[:, 0] == at_p[:, 0]).all(), name  # numRecords: always read in place
            compared = at_k.copy()
            compared[~both, 1:] = False
            found = compared.ravel()
            for field in ("first", "length", "quoted", "unsure"):
                assert (getattr(values_k, field)[found] == getattr(values_p, field)[found]).all(), (name, field)
            sure = found & ~values_k.unsure
            assert (values_k.head[sure] == values_p.head[sure]).all(), name
            seen += [found.any(), redo_k.any(), (redo_p & ~redo_k).any()]
        for search in (kernel, None):
            monkeypatch.setattr(stats_search, "KERNEL", search)
            assert _compare(snap) == 4
        monkeypatch.undo()
    assert all(seen[0::3]) and any(seen[1::3]) and any(seen[2::3])  # the fuzz reaches every case
    adds = snap.add_actions()
    assert column_bounds(snap, adds, ["id"])["id"].num_records.to_pylist() == num_records(adds).to_pylist()


def test_quotes_before_counts_the_quotes_up_to_each_position():
    import numpy as np

    from deltaexplore.core.scan.stats_search import _quotes_before

    rng = np.random.default_rng(3)
    data = rng.choice(np.frombuffer(b'"ab{}', dtype=np.uint8), 1000)
    for positions in (rng.integers(0, 1001, 300), np.array([0, 1000]), np.array([7, 8, 9, 15, 16, 17]), np.array([5])):
        expected = [int(np.count_nonzero(data[positions.min() : p] == ord('"'))) for p in positions]
        assert _quotes_before(data, positions).tolist() == expected


@pytest.mark.corpus
@pytest.mark.parametrize("row", _tables())
def test_corpus_data_skipping_same_by_search_and_by_parse(row, monkeypatch):
    """`skipping.prune_by_stats` reads a few columns' bounds by the search; forced to the core's
    full parse it keeps exactly the same files."""
    import pyarrow.compute as pc

    from deltaexplore.core.protocol.predicates import parse_predicate
    from deltaexplore.core.scan import skipping, stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        snap = dx.open_table(str(CORPUS / row["table_root"])).snapshot()
        adds = snap.add_actions()
        cols = [
            c
            for c in stats_columns(snap.schema, snap.column_mapping_mode, snap.partition_columns, None)
            if len(c.physical) == 1 and c.field.type.name in ("integer", "long", "short", "byte", "double", "string", "date")
        ][:2]
        if not cols:
            pytest.skip("no top-level column with orderable stats")
        core = stats_for_adds(snap, adds, [c.name for c in cols])
        predicates = []
        for c in cols:
            low = pc.min(core.column(f"min.{c.name}")).as_py()
            name = f"`{c.name}`"
            if low is None:
                predicates.append(f"{name} IS NULL")
                continue
            value = f"'{low}'" if isinstance(low, str) else (f"DATE '{low}'" if hasattr(low, "isoformat") else str(low))
            predicates += [f"{name} > {value}", f"{name} = {value}", f"{name} IS NOT NULL"]
        if len(cols) == 2:
            predicates.append(f"({predicates[0]}) AND ({predicates[-1]})")
        for text in predicates:
            expr = parse_predicate(text)
            searched = skipping.prune_by_stats(snap, expr, adds)
            monkeypatch.setattr(stats, "column_limit", lambda: 0)
            parsed = skipping.prune_by_stats(snap, expr, adds)
            monkeypatch.undo()
            assert searched.tolist() == parsed.tolist(), text


def test_kernel_on_junk_text_agrees_with_the_numpy_search_and_the_core(tmp_path, monkeypatch, kernel):
    """Random text made of JSON's structural characters, the column's key and the headers: no
    crash, no read outside a document, and the same answers as the numpy search and the core."""
    import random

    from deltaexplore.core.scan import stats_search

    rng = random.Random(11)
    pieces = [
        '"id":',
        '"minValues":{',
        '"maxValues":{',
        '"nullCount":{',
        '{"numRecords":',
        "{",
        "}",
        "[",
        "]",
        '"',
        "\\",
        ",",
        ":",
        " ",
        "1",
        "-2.5e3",
        "null",
        "x",
        "\u00e9",
    ]
    docs = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    docs += ['{"minValues":{"id":1},"maxValues":{"id":2},"nullCount":{"id":0}}'] * 20  # some the search reads
    actions = [commit_info("WRITE"), protocol(), metadata(schema=SCHEMA)]
    actions += [add(f"f{i}.parquet", 1, stats=t) for i, t in enumerate(docs)]
    write_commit(tmp_path, 0, actions)
    snap = dx.open_table(str(tmp_path)).snapshot()
    col = next(c for c in stats_columns(snap.schema, "none", [], None) if c.name == "id")
    read = 0
    for run in stats_search._runs(snap.add_actions().column("stats"), 1, 1009):
        monkeypatch.setattr(stats_search, "KERNEL", kernel)
        at_k, values_k, redo_k = stats_search._locate(run, '"id":', col)
        monkeypatch.setattr(stats_search, "KERNEL", None)
        at_p, values_p, redo_p = stats_search._locate(run, '"id":', col)
        assert not (redo_k & ~redo_p).any()
        both = ~redo_p
        assert (at_k[both] == at_p[both]).all()
        compared = (at_k & both[:, None]).ravel()
        for field in ("first", "length", "quoted", "unsure"):
            assert (getattr(values_k, field)[compared] == getattr(values_p, field)[compared]).all(), field
        inside = (values_k.first >= run.starts.repeat(4)) & (values_k.first + values_k.length <= run.limits.repeat(4))
        assert inside[at_k.ravel() & ~values_k.unsure].all()
        read += int((~redo_k & run.has).sum())
    assert read >= 20
    for search in (kernel, None):
        monkeypatch.setattr(stats_search, "KERNEL", search)
        assert _compare(snap) == 4
