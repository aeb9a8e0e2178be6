"""Hostile inputs named in issue 16: each gives a result or a typed error naming the file,
within bounded time (a walk over version numbers would never end here: an alarm fails the
test instead of hanging the suite)."""

from __future__ import annotations

import json
import resource
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "write"))

from helpers import simple_table
from write_helpers import sample

import deltaexplore as dx
from deltaexplore import inspect as dxi
from deltaexplore.core.operations import checkpoint, optimize, vacuum, write_table
from deltaexplore.core.protocol.schema import parse_schema


def _address_space() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@pytest.fixture(autouse=True)
def bounded() -> Iterator[None]:
    """Fail (instead of hanging or eating the machine) when a case runs for more than a minute
    or grows the process by more than 4 GiB of address space."""

    def fail(*_: object) -> None:
        raise TimeoutError("a hostile input made this run for more than 60 s")

    old = signal.signal(signal.SIGALRM, fail)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    used = _address_space()
    if used:
        limit = used + (4 << 30)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _table(tmp_path: Path, commits: int = 3) -> Path:
    root = tmp_path / "t"
    for i in range(commits):
        write_table(str(root), sample(4, 10 * i), partition_by=["part"])
    return root


def _everything(root: Path) -> None:
    """What a user does with a table (typed errors allowed)."""
    for step in (
        lambda t: t.snapshot().to_arrow(),
        lambda t: t.history(),
        lambda t: t.versions(),
        dxi.log_health,
        dxi.log_files,
        lambda t: dxi.commits(t, 0),
        lambda t: dxi.reconstructable_versions(t, vacuum_retention_hours=0),
        lambda t: dxi.diff(t, 0),
    ):
        try:
            step(dx.open_table(str(root)))
        except dx.DeltaExploreError:
            pass


@pytest.mark.parametrize("version", [10**6, 10**12, 10**18])
def test_a_stray_commit_far_ahead_is_an_invalid_log(tmp_path: Path, version: int) -> None:
    root = _table(tmp_path)
    name = f"{version:020d}.json"
    (root / "_delta_log" / name).write_text('{"commitInfo":{}}\n')
    with pytest.raises(dx.InvalidLogError, match=r"commits 3-\d+ are missing"):
        dx.open_table(str(root)).snapshot()
    assert dx.open_table(str(root)).snapshot(2).to_arrow().num_rows == 12  # what the log backs still reads
    _everything(root)


def test_a_version_beyond_a_long_is_refused(tmp_path: Path) -> None:
    root = _table(tmp_path)
    (root / "_delta_log" / "99999999999999999999.json").write_text('{"commitInfo":{}}\n')
    with pytest.raises(dx.InvalidLogError, match="99999999999999999999"):
        dx.open_table(str(root)).snapshot()
    _everything(root)


def test_stray_checkpoint_and_compaction_far_ahead_stay_bounded(tmp_path: Path) -> None:
    root = _table(tmp_path)
    checkpoint(str(root))
    log = root / "_delta_log"
    shutil.copy(log / f"{2:020d}.checkpoint.parquet", log / f"{10**12:020d}.checkpoint.parquet")
    shutil.copy(log / f"{1:020d}.json", log / f"{0:020d}.{10**15:020d}.compacted.json")
    table = dx.open_table(str(root))
    assert f"_delta_log/{0:020d}.{10**15:020d}.compacted.json" in table.listing().other_files
    health = {r["metric"]: r for r in dxi.log_health(table).to_pylist()}
    assert health["version_gaps"]["number"] == 10**12 - 2  # 3 .. 10**12 counted, not listed one by one
    assert dxi.log_files(table).num_rows == 4
    _everything(root)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [5_000, 500_000])
def test_deep_nesting_in_a_commit_is_an_invalid_log_naming_the_file(tmp_path: Path, depth: int) -> None:
    root = _table(tmp_path)
    commit = root / "_delta_log" / f"{1:020d}.json"
    commit.write_text(commit.read_text() + f'{{"commitInfo":{{"deep":{_deep(depth)}}}}}\n')
    table = dx.open_table(str(root))
    with pytest.raises(dx.InvalidLogError, match=f"{1:020d}.json"):
        table.history()
    assert table.snapshot().to_arrow().num_rows == 12  # the file actions are all fine
    add = root / "_delta_log" / f"{2:020d}.json"
    add.write_text(add.read_text() + f'{{"add":{{"path":"x.parquet","size":1,"partitionValues":{{}},"tags":{_deep(depth)}}}}}\n')
    with pytest.raises(dx.InvalidLogError, match=f"{2:020d}.json"):
        dx.open_table(str(root)).snapshot().files()


@pytest.mark.parametrize(
    "content",
    [
        '{"version":' + _deep(200_000) + "}",
        '{"version":3,"x":' + _deep(5_000) + ',"checksum":"0"}',
        '{"version":99999999999999999999999}',
        '{"version":2,"size":1e400,"parts":-1}',
        '{"version":"x"}',
    ],
)
def test_last_checkpoint_problems_are_recorded_never_raised(tmp_path: Path, content: str) -> None:
    root = _table(tmp_path)
    checkpoint(str(root))
    (root / "_delta_log" / "_last_checkpoint").write_text(content)
    table = dx.open_table(str(root))
    assert table.listing().last_checkpoint.problem
    assert table.snapshot().to_arrow().num_rows == 12
    health = {r["metric"]: r for r in dxi.log_health(table).to_pylist()}
    assert health["_last_checkpoint"]["status"] == "warn" and health["_last_checkpoint"]["value"] == "invalid"


def test_decimal_beyond_38_digits_is_refused_at_schema_parse(tmp_path: Path) -> None:
    schema = {"type": "struct", "fields": [{"name": "d", "type": "decimal(100,5)", "nullable": True, "metadata": {}}]}
    with pytest.raises(dx.DeltaProtocolError, match=r"decimal\(100,5\)"):
        parse_schema(json.dumps(schema))
    for bad in ("decimal(0,0)", "decimal(10,11)", "decimal(10,-1)"):
        schema["fields"][0]["type"] = bad
        with pytest.raises(dx.DeltaProtocolError):
            parse_schema(json.dumps(schema))
    schema["fields"][0]["type"] = "decimal(38,38)"
    assert parse_schema(json.dumps(schema)).fields[0].type.precision == 38


def _with_decimal_100(schema_string: str) -> str:
    schema = json.loads(schema_string)
    schema["fields"].append({"name": "d", "type": "decimal(100,5)", "nullable": True, "metadata": {}})
    return json.dumps(schema)


@pytest.mark.parametrize("where", ["commit", "checkpoint"])
def test_a_table_with_decimal_100_5_gives_typed_errors_naming_the_file(tmp_path: Path, where: str) -> None:
    import pyarrow.parquet as pq

    root = tmp_path / "t"
    write_table(str(root), pa.table({"id": pa.array([1, 2], pa.int64())}))
    log = root / "_delta_log"
    if where == "commit":
        named = f"{0:020d}.json"
        lines = [json.loads(x) for x in (log / named).read_text().splitlines()]
        for x in lines:
            if "metaData" in x:
                x["metaData"]["schemaString"] = _with_decimal_100(x["metaData"]["schemaString"])
        (log / named).write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    else:
        checkpoint(str(root))
        named = f"{0:020d}.checkpoint.parquet"
        cp = pq.read_table(log / named)
        rows = cp.to_pylist()
        for r in rows:
            if r["metaData"]:
                r["metaData"]["schemaString"] = _with_decimal_100(r["metaData"]["schemaString"])
        pq.write_table(pa.Table.from_pylist(rows, schema=cp.schema), log / named)
        (log / f"{0:020d}.json").unlink()  # only the checkpoint holds the metaData now
        (log / "_last_checkpoint").unlink()
    table = dx.open_table(str(root))
    for step in (lambda: table.snapshot().schema, lambda: table.snapshot().to_arrow(), lambda: dxi.layout(table, "id")):
        with pytest.raises(dx.DeltaProtocolError, match=r"decimal\(100,5\)") as info:
            step()
        assert named in str(info.value) and str(info.value.path).endswith(named)
    assert dxi.files(table).num_rows == 1  # what needs no schema still works


@pytest.mark.parametrize("size", [str(2**70), "-5", "1e400", "0"])
def test_a_target_file_size_beyond_a_long_is_no_setting(tmp_path: Path, size: str) -> None:
    root = tmp_path / "t"
    write_table(str(root), sample(4), partition_by=["part"], configuration={"delta.targetFileSize": size})
    table = dx.open_table(str(root))
    assert dxi.files(table).column("is_small").to_pylist() == [True, True]  # the 128 MiB default applies
    dxi.overview(table)
    dxi.partitions(table)
    assert optimize(str(root), dry_run=True).column("dry_run")[0].as_py()


@pytest.mark.parametrize("hours", [float("nan"), float("inf"), float("-inf"), 1e300, 10**400])
def test_vacuum_retention_must_be_a_finite_number(tmp_path: Path, hours: float) -> None:
    root = tmp_path / "t"
    simple_table(root)
    with pytest.raises(dx.InvalidArgumentError, match="retention_hours"):
        vacuum(str(root), retention_hours=hours, enforce_retention_duration=False)
    with pytest.raises(dx.InvalidArgumentError, match="retention_hours"):
        dxi.vacuum_preview(dx.open_table(str(root)), retention_hours=hours)
    with pytest.raises(dx.InvalidArgumentError, match="retention_hours"):
        dxi.reconstructable_versions(dx.open_table(str(root)), vacuum_retention_hours=hours)


@pytest.mark.parametrize("value", ["a\x00b", "x\x01y", "line\nbreak", "tab\there", "del\x7f"])
def test_control_characters_in_partition_values_are_refused_at_write(tmp_path: Path, value: str) -> None:
    root = tmp_path / "t"
    write_table(str(root), sample(2), partition_by=["part"])
    with pytest.raises(dx.WriteRefusedError, match="control character"):
        write_table(str(root), pa.table({"id": [9], "part": [value], "value": ["v"]}))
    assert dx.open_table(str(root)).latest_version() == 0
    assert not [p for p in root.iterdir() if p.name.startswith("part=") and p.name not in ("part=a", "part=b")]


@pytest.mark.parametrize("configuration", [{}, {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}])
def test_rewrites_keep_partition_values_with_control_characters(tmp_path: Path, configuration: dict) -> None:
    """Written by another engine (the log holds them escaped): OPTIMIZE compacts such a
    partition, DELETE and UPDATE rewrite it, all keeping the value; only a new value is refused."""
    from deltaexplore.core.operations import delete, update

    value = "a\x00b\x01\n\x7f"
    root = tmp_path / "t"
    for i in range(3):
        rows = pa.table({"id": pa.array([i, i + 10], pa.int64()), "part": ["a", "a"], "value": ["x", "y"]})
        write_table(str(root), rows, partition_by=["part"], configuration=configuration if i == 0 else None)
    for v in range(3):
        log = root / "_delta_log" / f"{v:020d}.json"
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        for x in lines:
            if "add" in x:
                x["add"]["partitionValues"]["part"] = value
        log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    m = optimize(str(root)).to_pylist()[0]
    assert (m["num_files_removed"], m["num_files_added"]) == (3, 1)
    snap = dx.open_table(str(root)).snapshot()
    assert [dict(a["partitionValues"]) for a in snap.add_actions().to_pylist()] == [{"part": value}]
    assert (root / "part=a%00b%01%0A%7F").is_dir()  # the directory name escapes them as Spark does
    delete(str(root), "id = 1", use_deletion_vectors=False)
    update(str(root), {"value": "'z'"}, "id = 2")
    delete(str(root), "id = 10")
    with pytest.raises(dx.WriteRefusedError, match="control character"):
        update(str(root), {"part": "'c\x00'"}, "id = 0")
    rows = dx.open_table(str(root)).snapshot().to_arrow().sort_by("id").to_pylist()
    assert [(r["id"], r["part"], r["value"]) for r in rows] == [
        (0, value, "x"),
        (2, value, "z"),
        (11, value, "y"),
        (12, value, "y"),
    ]
    if configuration:
        assert set(dx.open_table(str(root)).changes(4).column("part").to_pylist()) == {value}


def test_invalid_utf8_in_a_checkpoint_is_an_invalid_checkpoint(tmp_path: Path) -> None:
    """Parquet hands strings over unchecked: a checkpoint whose paths are not UTF-8 must not
    reach the engines behind (polars panics on them) but be named as corrupt."""
    import pyarrow.parquet as pq

    root = _table(tmp_path)
    checkpoint(str(root))
    cp = root / "_delta_log" / f"{2:020d}.checkpoint.parquet"
    pq.write_table(pq.read_table(cp), cp, compression="none", use_dictionary=False)
    data = bytearray(cp.read_bytes())
    at = data.find(b"part-")
    assert at > 0
    while at > 0:  # every copy of a path (data pages and footer statistics)
        data[at + 1] = 0xFF
        at = data.find(b"part-", at + 1)
    cp.write_bytes(bytes(data))
    table = dx.open_table(str(root))
    with pytest.raises(dx.InvalidCheckpointError, match=cp.name):
        table.snapshot().files()
    with pytest.raises(dx.DeltaExploreError):
        dxi.commits(table, 2, checkpoints=True)
    _everything(root)


def test_a_checkpoint_part_that_is_a_data_file_stops_vacuum(tmp_path: Path) -> None:
    """A multi-part checkpoint whose part is a data file would read as a part with no files, and
    VACUUM would then delete the data of that part: it is an invalid checkpoint instead."""
    import pyarrow.parquet as pq

    from deltaexplore.core.write.checkpoint_writer import write_checkpoint

    root = _table(tmp_path)
    result = write_checkpoint(dx.open_table(str(root)))
    full = pq.read_table(root / result.path)
    log = root / "_delta_log"
    half = full.num_rows // 2
    pq.write_table(full.slice(0, half), log / f"{2:020d}.checkpoint.{1:010d}.{2:010d}.parquet")
    pq.write_table(sample(3), log / f"{2:020d}.checkpoint.{2:010d}.{2:010d}.parquet")  # not a part
    (root / result.path).unlink()
    (log / "_last_checkpoint").unlink()
    before = sorted(p.name for p in root.rglob("*.parquet") if "_delta_log" not in p.parts)
    table = dx.open_table(str(root))
    with pytest.raises(dx.InvalidCheckpointError, match="not a checkpoint"):
        table.snapshot().files()
    with pytest.raises(dx.InvalidCheckpointError):
        vacuum(str(root), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert sorted(p.name for p in root.rglob("*.parquet") if "_delta_log" not in p.parts) == before


def test_invalid_utf8_in_checkpoint_metadata_is_no_panic(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 in a checkpoint's key-value metadata (parquet keeps them as is)
    made polars panic (a BaseException) in `inspect.commits`."""
    import pyarrow.parquet as pq

    root = _table(tmp_path)
    checkpoint(str(root))
    cp = root / "_delta_log" / f"{2:020d}.checkpoint.parquet"
    full = pq.read_table(cp)
    pq.write_table(full.replace_schema_metadata({b"org.apache.spark.version": b"3.5\xff\xfe"}), cp)
    table = dx.open_table(str(root))
    rows = dxi.commits(table, 2, checkpoints=True)
    assert "checkpoint" in rows.column("source").to_pylist()
    assert table.snapshot().to_arrow().num_rows == 12
