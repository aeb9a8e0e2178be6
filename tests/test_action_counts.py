"""The compiled add/remove scanner of history (`core.scan.action_counts`, `_count_kernel.c`)
gives exactly what the ordinary parse gives (`LogLines.file_actions`): on every corpus log and
on generated commits with odd lines (escapes, key orders, whitespace, unicode, missing stats or
numRecords, extra fields, odd deletion vectors), whose unsure lines it leaves to that parse."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pytest
from helpers import commit_info, metadata, protocol, write_commit

import deltaexplore as dx
from deltaexplore.core.log.json_log import read_log_files
from deltaexplore.core.scan import action_counts as ac

pytestmark = pytest.mark.skipif(ac.KERNEL is None, reason="the count kernel is not built (no C compiler)")


@pytest.fixture(scope="module", params=["built", "portable"])
def compiled(request, tmp_path_factory):
    """The kernel as installed (SSE2 on x86-64), and compiled again without SSE2 (the byte
    loops other CPUs run)."""
    if request.param == "built":
        return ac.KERNEL
    import importlib.util
    import shutil
    import subprocess
    import sysconfig
    from pathlib import Path

    cc = sysconfig.get_config_var("CC")
    cc = shutil.which(cc.split()[0] if cc else "cc")
    if cc is None:
        pytest.skip("no C compiler")
    source = Path(ac.__file__).with_name("_count_kernel.c")
    out = tmp_path_factory.mktemp("portable") / ("_count_kernel" + sysconfig.get_config_var("EXT_SUFFIX"))
    include = sysconfig.get_paths()["include"]
    subprocess.run([cc, "-O2", "-U__SSE2__", "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(out)], check=True)
    spec = importlib.util.spec_from_file_location("_count_kernel", out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def kernel(compiled, monkeypatch):
    """`action_counts` run with the `compiled` kernel."""
    monkeypatch.setattr(ac, "KERNEL", compiled)
    return compiled


def _lines(table: dx.Table):
    versions = [v for v in table.versions() if table.listing().commit(v) is not None]
    files = [table.listing().commit(v) for v in versions]
    return read_log_files(table.storage, [f for f in files if f is not None], versions)


def _both(lines, kind: str, monkeypatch) -> tuple[ac.ActionCounts, ac.ActionCounts]:
    scanned = ac.action_counts(lines, kind)
    with monkeypatch.context() as m:
        m.setattr(ac, "KERNEL", None)
        parsed = ac.action_counts(lines, kind)
    return scanned, parsed


def _assert_equal(a: ac.ActionCounts, b: ac.ActionCounts, where: object) -> None:
    for name, x, y in zip(ac.ActionCounts._fields, a, b):
        assert x.dtype == y.dtype and np.array_equal(x, y), (where, name)


def _history_both(path: str, monkeypatch) -> tuple[pa.Table, pa.Table]:
    scanned = dx.open_table(path).history()
    with monkeypatch.context() as m:
        m.setattr(ac, "KERNEL", None)
        parsed = dx.open_table(path).history()
    return scanned, parsed


def test_the_scanner_counts_what_the_parse_counts_on_every_corpus_log(corpus, monkeypatch, kernel):
    from corpus_paths import corpus_catalog

    checked = read = 0
    for row in corpus_catalog():
        path = str(corpus / row["table_root"])
        try:
            table = dx.open_table(path)
            lines = _lines(table)
        except dx.DeltaExploreError:
            continue
        for kind in ("add", "remove"):
            try:
                scanned, parsed = _both(lines, kind, monkeypatch)
            except dx.DeltaExploreError as exc:  # a bad log fails the same way on both paths
                with monkeypatch.context() as m:
                    m.setattr(ac, "KERNEL", None)
                    with pytest.raises(type(exc)):
                        ac.action_counts(lines, kind)
                continue
            _assert_equal(scanned, parsed, (row["table_root"], kind))
            read += len(scanned.version)
        try:
            got, want = _history_both(path, monkeypatch)
        except dx.DeltaExploreError:
            continue
        assert got.equals(want), row["table_root"]
        checked += 1
    assert checked > 100 and read > 1000


def _flags(lines, kind: str) -> np.ndarray:
    from deltaexplore.core.arrow import text_buffers

    idx = lines.where(kind)
    offsets, data = text_buffers(lines.text)
    n = len(idx)
    flags = np.zeros(n, np.uint8)
    out = [np.zeros(n, np.int64) for _ in range(3)]
    ac.KERNEL.scan(data, np.ascontiguousarray(offsets[idx]), np.ascontiguousarray(offsets[idx + 1]), flags, *out)
    return flags


def _stats(rng: random.Random) -> object:
    n = rng.choice([0, 7, 123456789, -3])
    choices = [
        {"numRecords": n, "minValues": {"a": 1}, "maxValues": {"a": 9}, "nullCount": {"a": 0}},
        {"minValues": {"numRecords": 99}, "numRecords": n},
        {"minValues": {"s": 'q"uo\\te'}, "numRecords": n},
        {"minValues": {"s": "line\nbreak é ✓"}, "numRecords": n},
        {"tightBounds": True},
        {"numRecords": None, "maxValues": {}},
        {"numRecords": 10**19},
        {"numRecords": 12345678901234567},
        {"numRecords": 1.5},
        {},
    ]
    doc = rng.choice(choices)
    text = json.dumps(doc, separators=rng.choice([(",", ":"), (", ", ": "), (",", " : ")]), ensure_ascii=rng.random() < 0.5)
    return rng.choice([text, text, text, None, "not json", '{"numRecords" :\t4}'])


def _dv(rng: random.Random) -> object:
    full = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 1,
        "sizeInBytes": 36,
        "cardinality": rng.randint(0, 9),
    }
    return rng.choice(
        [
            None,
            full,
            {k: v for k, v in full.items() if k != "cardinality"},
            {**full, "offset": None, "extra": [1, {"x": "}"}]},
            {
                "storageType": "i",
                "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
                "sizeInBytes": 40,
                "cardinality": 6,
            },
            {},
        ]
    )


def _action(rng: random.Random, i: int) -> str:
    body: dict[str, object] = {
        "path": rng.choice([f"p{i}.parquet", f"d=é/p{i}.parquet", f'we"ird\\{i}.parquet', f"sp ace/%20{i}✓.parquet"]),
        "partitionValues": rng.choice([{}, {"d": "é"}, {"d": None, "e": "x}"}]),
        "size": rng.choice([100 + i, 0, None, 10**15]),
        "modificationTime": 1_700_000_000_000,
        "dataChange": rng.random() < 0.8,
    }
    if rng.random() < 0.85:
        body["stats"] = _stats(rng)
    if rng.random() < 0.3:
        body["deletionVector"] = _dv(rng)
    if rng.random() < 0.2:
        body["tags"] = {"INSERTION_TIME": "1", "odd": '[{"]'}
    if rng.random() < 0.2:
        body["baseRowId"] = i
        body["clusteringProvider"] = None
        body["nested"] = [[1, 2.5e3, -0.0], {"a": [True, False, None]}]
    if rng.random() < 0.1:
        del body["size"]
    keys = list(body)
    rng.shuffle(keys)
    kind = rng.choice(["add", "add", "remove"])
    if kind == "remove":
        body.pop("modificationTime", None)
        body["deletionTimestamp"] = 1_700_000_000_000
        keys = list(body)
        rng.shuffle(keys)
    sep = rng.choice([(",", ":"), (", ", ": "), (" ,\t", " :  ")])
    inner = json.dumps({k: body[k] for k in keys}, separators=sep, ensure_ascii=rng.random() < 0.5)
    tail = ',"extra":{"x":1}' if rng.random() < 0.05 else ""
    if rng.random() < 0.1:
        return f'  {{ "{kind}" :\t{inner}{tail} }} '
    return f'{{"{kind}":{inner}{tail}}}'


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_odd_lines_count_the_same_on_both_paths(tmp_path, monkeypatch, seed, kernel):
    rng = random.Random(seed)
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    i = 0
    for version in range(1, 13):
        lines = [json.dumps(commit_info())]
        for _ in range(rng.randint(0, 40)):
            lines.append(_action(rng, i))
            i += 1
        (tmp_path / "_delta_log" / f"{version:020d}.json").write_text("\n".join(lines) + "\n")
    log = _lines(dx.open_table(str(tmp_path)))
    for kind in ("add", "remove"):
        scanned, parsed = _both(log, kind, monkeypatch)
        _assert_equal(scanned, parsed, (seed, kind))
        flags = _flags(log, kind)
        assert (flags != 0).any() and (flags == 0).any()  # both the scanner and the parse had lines
    got, want = _history_both(str(tmp_path), monkeypatch)
    assert got.equals(want)


def test_the_scanner_reads_plain_lines_and_leaves_the_unsure_ones(tmp_path, kernel):
    """Which lines the scanner reads itself (flag bit 0) and what it reads from them."""
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    dv = '{"storageType":"u","pathOrInlineDv":"x","offset":1,"sizeInBytes":3,"cardinality":4}'
    lines = [
        '{"add":{"path":"a","size":10,"stats":"{\\"numRecords\\":7}","dataChange":true}}',  # read
        '{"add":{"stats":"{\\"x\\":1, \\"numRecords\\" : 8}","deletionVector":' + dv + ',"size":5,"path":"b\\u00e9"}}',
        '{"add":{"path":"c","size":null}}',  # read: no size, no stats
        '{"add":{"path":"d","size":1.0}}',  # a size that is not an integer: the parse
        '{"add":{"path":"e","size":1,"stats":"{\\"numRecords\\":1,\\"s\\":\\"\\\\n\\"}"}}',  # an escape in stats
        '{"add":{"path":"f","size":1,"size":2}}',  # a repeated key
        '{"add":{"path":"g","size":1,"deletionVector":{}}}',  # an empty DV
        '{"add":{"path":"h","size":1},"more":1}',  # another top-level key
        '{"add":{"p\\u0061th":"i","size":1}}',  # an escaped key
        '{"add":{"path":"j","size":1,"stats":"{\\"numRecords\\":123456789012345678}"}}',  # 18 digits
    ]
    (tmp_path / "_delta_log" / f"{1:020d}.json").write_text("\n".join(lines) + "\n")
    log = _lines(dx.open_table(str(tmp_path)))
    flags = _flags(log, "add")
    assert list(flags & 1) == [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    assert list(flags[:3]) == [1 | 2 | 4, 1 | 2 | 4 | 8, 1]
    counts = ac.action_counts(log, "add")
    assert list(counts.size[:3]) == [10, 5, 0] and list(counts.rows[:2]) == [7, 4]


def test_a_bad_line_fails_alike_with_the_scanner(tmp_path, monkeypatch):
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    (tmp_path / "_delta_log" / f"{1:020d}.json").write_text('{"add":{"path":"a","size":1}}\n{"add":{"size":3}}\n')
    for compiled in (ac.KERNEL, None):
        monkeypatch.setattr(ac, "KERNEL", compiled)
        with pytest.raises(dx.InvalidLogError, match=r"00000000000000000001.json:2: 'add' action without a string 'path'"):
            dx.open_table(str(tmp_path)).history()


_BASE_LINES = [
    b'{"add":{"path":"a","size":10,"stats":"{\\"numRecords\\":7,\\"minValues\\":{\\"a\\":\\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\\"}}",'
    b'"deletionVector":{"storageType":"u","pathOrInlineDv":"x","offset":1,"sizeInBytes":3,"cardinality":4},'
    b'"tags":{"a":[1,2,{"b":null}]}}}',
    b'{"remove":{"path":"b\\u00e9","size":null,"stats":null}}',
    b'{"add":{"size":123,"path":"p","stats":"{\\"x\\":1, \\"numRecords\\" : -12}"}}',
]


def test_a_mutated_line_the_scanner_reads_is_json_with_the_values_it_read(kernel):
    """Lines with random bytes changed: every line the scanner reads is valid JSON (`json.loads`)
    and what it read is what Python reads from it (numRecords by the regex of `num_records`)."""
    import re

    rng = random.Random(7)
    accepted = 0
    for _ in range(20_000):
        line = bytearray(rng.choice(_BASE_LINES))
        for _ in range(rng.randint(0, 3)):
            line[rng.randrange(len(line))] = rng.choice(b'"\\{}[],:0123456789 \tu-e.')
        flags = np.zeros(1, np.uint8)
        size, records, card = (np.zeros(1, np.int64) for _ in range(3))
        data = np.frombuffer(bytes(line), np.uint8)
        kernel.scan(data, np.array([0], np.int64), np.array([len(line)], np.int64), flags, size, records, card)
        if not flags[0]:
            continue
        accepted += 1
        ((_, body),) = json.loads(bytes(line)).items()
        assert isinstance(body["path"], str)
        assert bool(flags[0] & 2) == (body.get("size") is not None) and (not flags[0] & 2 or body["size"] == size[0])
        stats = body.get("stats")
        found = re.search(r'"numRecords"\s*:\s*(-?\d+)', stats) if isinstance(stats, str) else None
        assert bool(flags[0] & 4) == (found is not None) and (found is None or int(found.group(1)) == records[0])
        dv = body.get("deletionVector")
        assert bool(flags[0] & 8) == (dv is not None) and (dv is None or card[0] == (dv.get("cardinality") or 0))
    assert accepted > 1000


# -- the compiled read of whole commit files (`commit_counts`, the kernel's `count_files`) -----
class _ScanOnly:
    """A kernel built before `count_files`: the files are read by `read_log_files`, the lines
    scanned by `scan`."""

    def __init__(self, kernel) -> None:
        self.scan = kernel.scan


def _histories(path: str, monkeypatch, kernel) -> dict[str, pa.Table]:
    """History by the three paths: files read by the kernel, lines scanned by it, plain parse."""
    out = {}
    for name, compiled in (("files", kernel), ("lines", _ScanOnly(kernel)), ("parse", None)):
        with monkeypatch.context() as m:
            m.setattr(ac, "KERNEL", compiled)
            out[name] = dx.open_table(path).history()
    return out


def _counted(path: str) -> ac.CommitCounts | None:
    table = dx.open_table(path)
    versions = table.listing().versions()
    return ac._compiled_commit_counts(table.storage, [table.listing().commit(v) for v in versions], versions)


def _write_raw(root, version: int, data: bytes) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_bytes(data)


_PLAIN = '{"add":{"path":"p%d","size":%d,"stats":"{\\"numRecords\\":%d}","dataChange":true}}'


def test_odd_files_count_the_same_read_by_the_kernel(tmp_path, monkeypatch, kernel):
    """Commit files with CRLF endings, blank lines, no newline at the end, an empty commit, escaped
    and non-ASCII strings, `\\n` escapes inside strings, a 3 MB line and files of many lines: the
    history is the same whether the kernel reads the files, scans the split lines or nothing is
    compiled; and the kernel did count the plain lines itself."""
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    info = json.dumps(commit_info())
    plain = [_PLAIN % (i, 10 + i, i) for i in range(50)]
    escaped = [
        '{"add":{"path":"a\\"b\\\\c\\u00e9 é ✓","size":7,"stats":"{\\"numRecords\\":3,\\"minValues\\":{\\"s\\":\\"x\\\\ny\\"}}"}}',
        '{"remove":{"path":"r\\n1","size":5,"stats":"{\\"numRecords\\":2,\\"minValues\\":{\\"s\\":\\"é\\\\u00e9\\"}}"}}',
    ]
    # escapes at every position of a 64-byte block (the kernel reads strings a block at a time)
    escaped += [
        '{"add":{"path":"' + "q" * k + "\\\\" + "r" * k + '\\"","size":1,"stats":"{\\"numRecords\\":1}"}}' for k in range(130)
    ]
    escaped += ['{"add":{"path":"s","size":1,"stats":"{\\"numRecords\\":1,\\"%s\\":1}"}}' % ("k" * k) for k in range(130)]
    huge = (
        '{"add":{"path":"big","size":1,"stats":"{\\"numRecords\\":9,\\"minValues\\":{'
        + ",".join(f'\\"c{i}\\":\\"{"v" * 40}\\"' for i in range(60_000))
        + '}}"}}'
    )
    files = [
        "\r\n".join([info, *plain]) + "\r\n",  # CRLF
        "\n".join([info, "", *plain[:5], "   ", "\t", *plain[5:]]) + "\n\n",  # blank lines
        "\n".join([info, *plain]),  # no newline at the end
        "",  # an empty commit
        "\n".join([info, *escaped]) + "\n",
        "\n".join([info, huge, *plain]) + "\n",
        "\n".join([info, *(_PLAIN % (i, i, i) for i in range(20_000))]) + "\n",  # larger than one read buffer
        "\n".join([info, *plain, json.dumps({"cdc": {"path": "c", "size": 3, "partitionValues": {}, "dataChange": False}})]),
    ]
    for version, text in enumerate(files, start=1):
        _write_raw(tmp_path, version, text.encode())
    got = _histories(str(tmp_path), monkeypatch, kernel)
    assert got["files"].equals(got["parse"]) and got["lines"].equals(got["parse"])
    counted = _counted(str(tmp_path))
    assert counted is not None
    assert counted.sums[:, 0, 0].sum() > 20_000  # the adds were summed by the kernel...
    assert len(counted.lines) < 100  # ...only the other lines (and none of the plain ones) left to parse
    history = got["files"].sort_by("version")
    assert history.column("files_added").to_pylist()[1:5] == [50, 50, 50, 0]
    assert history.column("rows_added").to_pylist()[5] == 3 + 260 and history.column("rows_removed").to_pylist()[5] == 2
    assert history.column("cdc_files").to_pylist()[8] == 1


@pytest.mark.parametrize("seed", [5, 6])
def test_generated_odd_lines_in_odd_files_count_the_same(tmp_path, monkeypatch, seed, kernel):
    """`_action`'s odd lines written with CRLF or LF, blank lines between, with or without the last
    newline: the three paths give the same history."""
    rng = random.Random(seed)
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    i = 0
    for version in range(1, 15):
        lines = [json.dumps(commit_info())]
        for _ in range(rng.randint(0, 40)):
            lines.append(_action(rng, i) if rng.random() < 0.9 else rng.choice(["", " ", "\r"]))
            i += 1
        text = rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["", "\n", "\r\n", "\n\n"])
        _write_raw(tmp_path, version, text.encode())
    got = _histories(str(tmp_path), monkeypatch, kernel)
    assert got["files"].equals(got["parse"]) and got["lines"].equals(got["parse"])
    assert _counted(str(tmp_path)) is not None


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b'{"add":{"path":"a\xff","size":1}}', "not valid UTF-8"),  # bad bytes in a line the kernel would read
        (b'{"add":{"path":"a","size":1,"stats":"{\\"numRecords\\":1,\\"s\\":\\"\xed\xa0\x80\\"}"}}', "not valid UTF-8"),
        (b'{"commitInfo":{"x":"\xc3"}}', "not valid UTF-8"),
        (b'{"add":{"path":"a","size":1,"stats":"{\\"numRecords\\":1}"', "00000000000000000001.json:2"),  # truncated
        (b'{"add":{"path":"a\nb","size":1}}', "00000000000000000001.json:3: malformed"),  # a newline in a string
        (b"not json", "00000000000000000001.json:2: malformed log line"),
    ],
)
def test_bad_text_fails_alike_on_every_path(tmp_path, monkeypatch, kernel, line, error):
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    _write_raw(tmp_path, 1, json.dumps(commit_info()).encode() + b"\n" + line + b"\n" + (_PLAIN % (1, 1, 1)).encode())
    messages = []
    for compiled in (kernel, _ScanOnly(kernel), None):
        monkeypatch.setattr(ac, "KERNEL", compiled)
        with pytest.raises(dx.InvalidLogError, match=error) as info:
            dx.open_table(str(tmp_path)).history()
        messages.append(str(info.value))
    assert len(set(messages)) == 1, messages


@pytest.mark.parametrize("damage", ["deleted", "a directory"])
def test_a_commit_gone_or_unreadable_after_the_listing_fails_alike(tmp_path, monkeypatch, kernel, damage):
    """A commit file deleted (or replaced by what cannot be read) between the listing and the read:
    the kernel reports it and the plain read raises its typed error, as without the kernel."""
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    _write_raw(tmp_path, 1, (_PLAIN % (1, 1, 1)).encode())
    table = dx.open_table(str(tmp_path))
    files = [table.listing().commit(v) for v in (0, 1)]
    target = tmp_path / "_delta_log" / f"{1:020d}.json"
    target.unlink()
    if damage == "a directory":
        target.mkdir()
    outcomes = []
    for compiled in (kernel, None):
        monkeypatch.setattr(ac, "KERNEL", compiled)
        with pytest.raises(dx.DeltaExploreError) as info:
            ac.commit_counts(table.storage, files, [0, 1])
        outcomes.append((type(info.value), str(info.value)))
    assert outcomes[0] == outcomes[1] and "00000000000000000001.json" in outcomes[0][1]
    status = np.frombuffer(kernel.count_files([str(target).encode()])[1], np.int32)
    assert status[0] != 0  # the errno: ENOENT, or EISDIR from the read


def test_an_object_store_reads_the_plain_way_with_the_same_history(tmp_path, monkeypatch, kernel):
    """On an object store (fsspec memory) the files are read through the storage, not by the
    kernel: the history equals the local one."""
    import fsspec

    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    _write_raw(tmp_path, 1, ("\r\n".join(_PLAIN % (i, i, i) for i in range(30)) + "\n").encode())
    fs = fsspec.filesystem("memory")
    for f in (tmp_path / "_delta_log").iterdir():
        fs.pipe_file(f"/count-files-{kernel.__name__}/_delta_log/{f.name}", f.read_bytes())
    remote = dx.open_table(f"memory://count-files-{kernel.__name__}")
    assert remote.storage.local_root is None
    listing = remote.listing()
    assert ac._compiled_commit_counts(remote.storage, [listing.commit(v) for v in (0, 1)], [0, 1]) is None
    columns = [c for c in remote.history().column_names if c != "timestamp"]  # file times differ
    try:
        assert remote.history().select(columns).equals(dx.open_table(str(tmp_path)).history().select(columns))
        assert remote.history().column("rows_added").to_pylist() == [sum(range(30)), 0]
    finally:
        fs.rm(f"/count-files-{kernel.__name__}", recursive=True)


def test_mutated_commit_files_give_the_same_history_or_the_same_error(tmp_path, monkeypatch, kernel):
    """Commit files with random bytes changed (newlines, CR, form feeds, quotes, backslashes,
    bytes that are not UTF-8...): the kernel's read gives the history the plain path gives, or
    the same typed error."""
    rng = random.Random(11)
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    base = b"\n".join([json.dumps(commit_info()).encode(), *_BASE_LINES, (_PLAIN % (1, 2, 3)).encode()]) + b"\n"
    same = failed = 0
    for _ in range(150):
        text = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            text[rng.randrange(len(text))] = rng.choice(b'\n\r\x0c\t "\\{}:,0\xc3\xa9\xff')
        _write_raw(tmp_path, 1, bytes(text))
        outcomes = []
        for compiled in (kernel, None):
            monkeypatch.setattr(ac, "KERNEL", compiled)
            try:
                outcomes.append(dx.open_table(str(tmp_path)).history())
            except dx.DeltaExploreError as exc:
                outcomes.append((type(exc), str(exc)))
        if isinstance(outcomes[0], tuple):
            assert outcomes[0] == outcomes[1]
            failed += 1
        else:
            assert not isinstance(outcomes[1], tuple) and outcomes[0].equals(outcomes[1]), bytes(text)
            same += 1
    assert same > 10 and failed > 10


# -- the timeline's rows (`scan.action_rows`, the kernel's `action_rows`) ----------------------
def _rows_both(path: str, monkeypatch, kernel):
    """`action_rows` of every commit of the table: read by the kernel, and parsed (no kernel)."""
    from deltaexplore.core.scan import action_rows as ar

    table = dx.open_table(path)
    versions = [v for v in table.listing().versions() if table.listing().commit(v) is not None]
    files = [table.listing().commit(v) for v in versions]
    out = []
    for compiled in (kernel, None):
        with monkeypatch.context() as m:
            m.setattr(ac, "KERNEL", compiled)
            out.append(ar.action_rows(table.storage, files, versions))
    return out


def _canonical(rows) -> list:
    """The rows as comparable values, in replay order (the two paths list the kernel's rows
    first, then the parsed ones)."""
    order = np.argsort(rows.order, kind="stable")
    return [
        rows.key.take(pa.array(order)).to_pylist(),
        *(np.asarray(x)[order].tolist() for x in (rows.version, rows.order, rows.size, rows.records, rows.deleted)),
        rows.partition_maps().take(pa.array(order)).to_pylist(),
    ]


def _assert_rows_equal(path: str, monkeypatch, kernel, where: object) -> tuple[int, int]:
    (adds, removes, lines), (p_adds, p_removes, p_lines) = _rows_both(path, monkeypatch, kernel)
    assert _canonical(adds) == _canonical(p_adds), where
    assert _canonical(removes) == _canonical(p_removes), where
    for kind in ("commitInfo", "metaData", "protocol", "cdc"):  # what the caller reads from the lines
        assert [b for _, _, b in lines.objects(kind)] == [b for _, _, b in p_lines.objects(kind)], (where, kind)
    return len(adds.version) + len(removes.version), len(lines)


def test_the_rows_read_by_the_kernel_are_the_parsed_rows_on_every_corpus_log(corpus, monkeypatch, kernel):
    from corpus_paths import corpus_catalog

    checked = rows = 0
    for row in corpus_catalog():
        path = str(corpus / row["table_root"])
        try:
            got = _assert_rows_equal(path, monkeypatch, kernel, row["table_root"])
        except dx.DeltaExploreError:
            continue
        checked += 1
        rows += got[0]
    assert checked > 100 and rows > 1000


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_odd_lines_give_the_same_rows_read_by_the_kernel(tmp_path, monkeypatch, seed, kernel):
    """`_action`'s odd lines (escaped paths, odd DVs, partition values with braces or nulls,
    extra fields, CRLF, blank lines) and DVs with offsets, nested "partitionValues" keys: the
    same rows, and the kernel read some of them itself."""
    rng = random.Random(seed)
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    extra = [
        '{"add":{"path":"n1","partitionValues":{"d":"1"},"size":1,"tags":{"partitionValues":"x"}}}',
        '{"add":{"path":"n2","size":1,"x":{"partitionValues":{"d":"2"}},"partitionValues":{"d":"1"}}}',
        '{"add":{"path":"n3","partitionValues":{ "d" : "1" , "e" : null },"size":1,'
        '"deletionVector":{"storageType":"u","pathOrInlineDv":"ab","offset":7,"sizeInBytes":3,"cardinality":2}}}',
        '{"remove":{"path":"n3","deletionVector":{"storageType":"u","pathOrInlineDv":"ab","offset":null,'
        '"sizeInBytes":3,"cardinality":2}}}',
        '{"add":{"path":"n4","partitionValues":{"d":"1","d":"2"},"size":1}}',
        '{"add":{"path":"n5","partitionValues":{"d":1},"size":1,"deletionVector":{"storageType":"p","pathOrInlineDv":null}}}',
    ]
    i = 0
    for version in range(1, 13):
        lines = [json.dumps(commit_info())]
        for _ in range(rng.randint(0, 40)):
            lines.append(_action(rng, i) if rng.random() < 0.85 else rng.choice([*extra, ""]))
            i += 1
        text = rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["", "\n"])
        _write_raw(tmp_path, version, text.encode())
    (adds, removes, lines), _ = _rows_both(str(tmp_path), monkeypatch, kernel)
    _assert_rows_equal(str(tmp_path), monkeypatch, kernel, seed)
    parsed = len(lines.where("add")) + len(lines.where("remove"))
    assert len(adds.version) + len(removes.version) > parsed > 0  # both the kernel and the parse had lines


def _rows_outcome(path: str, monkeypatch, compiled) -> object:
    """The rows and the other lines' actions by one path, or its error (type and message)."""
    from deltaexplore.core.scan import action_rows as ar

    with monkeypatch.context() as m:
        m.setattr(ac, "KERNEL", compiled)
        try:
            table = dx.open_table(path)
            versions = table.listing().versions()
            adds, removes, lines = ar.action_rows(table.storage, [table.listing().commit(v) for v in versions], versions)
            objects = [[b for _, _, b in lines.objects(k)] for k in ("commitInfo", "metaData", "protocol", "cdc")]
            return _canonical(adds), _canonical(removes), objects
        except dx.DeltaExploreError as exc:
            return type(exc), str(exc)


def test_mutated_commit_files_give_the_same_rows_or_the_same_error(tmp_path, monkeypatch, kernel):
    rng = random.Random(13)
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    base = b"\n".join(
        [
            json.dumps(commit_info()).encode(),
            *_BASE_LINES,
            b'{"add":{"path":"x","partitionValues":{"d":"1"},"size":3,"deletionVector":'
            b'{"storageType":"u","pathOrInlineDv":"ab","offset":1,"sizeInBytes":3,"cardinality":1}}}',
        ]
    )
    same = failed = 0
    for _ in range(150):
        text = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            text[rng.randrange(len(text))] = rng.choice(b'\n\r\x0c\t "\\{}:,0\xc3\xa9\xff')
        _write_raw(tmp_path, 1, bytes(text))
        got, want = _rows_outcome(str(tmp_path), monkeypatch, kernel), _rows_outcome(str(tmp_path), monkeypatch, None)
        assert got == want, bytes(text)
        if len(got) == 2:
            failed += 1
        else:
            same += 1
    assert same > 10 and failed > 10


def test_where_finds_each_kinds_lines_as_a_comparison_over_all_lines_does(corpus, tmp_path):
    """`LogLines.where` (every kind found in one pass, on the first call) gives what comparing
    each line's kind does, blank and unknown-kind lines included, on every corpus log."""
    import pyarrow.compute as pc
    from corpus_paths import corpus_catalog

    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata()])
    _write_raw(tmp_path, 1, b'\n{"add":{"path":"a"}}\n  \n{"newKind":{}}\n{"remove":{"path":"a"}}\n')
    roots = [str(tmp_path), *(str(corpus / row["table_root"]) for row in corpus_catalog())]
    checked = 0
    for root in roots:
        try:
            lines = _lines(dx.open_table(root))
        except dx.DeltaExploreError:
            continue
        kinds = {k for k in lines.kind.to_pylist() if k is not None} | {"cdc", "nothing"}
        for kind in sorted(kinds):
            want = np.flatnonzero(pc.fill_null(pc.equal(lines.kind, kind), False).to_numpy(zero_copy_only=False))
            assert np.array_equal(lines.where(kind), want), (root, kind)
        checked += 1
    assert checked > 100
