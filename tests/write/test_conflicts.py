"""Conflict detection after a lost race, one test per rule, on local disk and on S3 (moto).

Each test starts two transactions from the same snapshot, commits one (the winner), then
commits the other: it must either rebase onto the winner or fail with `CommitConflictError`
and leave the table as the winner left it.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from write_helpers import rows, sample

import deltaexplore as dx
from deltaexplore.core.operations import write_table
from deltaexplore.core.protocol.actions import Protocol
from deltaexplore.core.write.data_writer import write_table_files
from deltaexplore.core.write.transaction import Transaction


@pytest.fixture
def table(location):
    uri, options = location
    write_table(uri, sample(10), partition_by=["part"], storage_options=options, max_rows_per_file=2)
    return dx.open_table(uri, options)


def _pair(t, **kw):
    snap = t.snapshot()
    return Transaction(t, operation="WRITE", read_snapshot=snap, **kw), Transaction(
        t, operation="WRITE", read_snapshot=snap, **kw
    )


def _append(txn, data):
    snap = txn.read_snapshot
    txn.add_files(write_table_files(txn.table.storage, data, snap.protocol, snap.metadata))


def _files_of(t, part):
    adds = t.snapshot().add_actions()
    keep = [dict(m or []).get("part") == part for m in adds.column("partitionValues").to_pylist()]
    return adds.filter(pa.array(keep))


def _assert_lost(t, loser, version_after_winner):
    with pytest.raises(dx.CommitConflictError, match="conflicts with this transaction") as err:
        loser.commit()
    assert t.latest_version() == version_after_winner
    return err.value


def test_append_vs_append_rebases(table):
    a, b = _pair(table)
    _append(a, sample(2, 100))
    _append(b, sample(3, 200))
    assert a.commit().version == 1
    result = b.commit()
    assert (result.version, result.attempts, result.rebased_over) == (2, 2, (1,))
    assert len(rows(table.snapshot().to_arrow(), "id")) == 15


def test_concurrent_metadata_change_conflicts(table):
    from dataclasses import replace

    a, b = _pair(table)
    md = a.read_snapshot.metadata
    a.update_metadata(replace(md, description="changed"))
    _append(b, sample(1, 100))
    a.commit()
    err = _assert_lost(table, b, 1)
    assert "metadata" in str(err)


def test_concurrent_protocol_change_conflicts(table):
    a, b = _pair(table)
    a.update_protocol(Protocol(1, 7, None, ("appendOnly", "invariants", "domainMetadata")))
    _append(b, sample(1, 100))
    a.commit()
    assert "protocol" in str(_assert_lost(table, b, 1))


def test_file_removed_twice_conflicts(table):
    a, b = _pair(table)
    victim = _files_of(table, "a").slice(0, 1)
    a.remove_files(victim)
    b.remove_files(victim)
    a.commit()
    err = _assert_lost(table, b, 1)
    assert "both transactions remove" in str(err)


def test_read_file_removed_by_winner_conflicts(table):
    a, b = _pair(table)
    files = _files_of(table, "a")
    a.remove_files(files.slice(0, 1))
    b.read_files(files)  # b read every file of partition a
    _append(b, sample(1, 100))
    a.commit()
    assert "which this transaction read" in str(_assert_lost(table, b, 1))


def test_winner_adds_files_matching_read_predicate_conflicts(table):
    a, b = _pair(table)
    _append(a, pa.table({"id": pa.array([50], pa.int64()), "part": ["a"], "value": ["x"]}))
    b.read_files("part = 'a'")
    b.remove_files(_files_of(table, "a").slice(0, 1))
    a.commit()
    assert "matches this transaction's read predicate" in str(_assert_lost(table, b, 1))


def test_winner_adds_outside_read_predicate_rebases(table):
    a, b = _pair(table)
    _append(a, pa.table({"id": pa.array([51], pa.int64()), "part": ["b"], "value": ["x"]}))
    b.read_files("part = 'a'")
    b.remove_files(_files_of(table, "a").slice(0, 1))
    a.commit()
    assert b.commit().version == 2


def test_stats_prune_winner_adds(table):
    a, b = _pair(table)
    _append(a, pa.table({"id": pa.array([1000], pa.int64()), "part": ["a"], "value": ["x"]}))
    b.read_files("id < 5")  # the winner's file has min id 1000: it cannot match
    b.remove_files(_files_of(table, "a").slice(0, 1))
    a.commit()
    assert b.commit().version == 2


def test_write_serializable_ignores_blind_appends(table):
    a, b = _pair(table, isolation="WriteSerializable")
    _append(a, pa.table({"id": pa.array([52], pa.int64()), "part": ["a"], "value": ["x"]}))
    b.read_files("part = 'a'")
    b.remove_files(_files_of(table, "a").slice(0, 1))
    a.commit()
    assert b.commit().version == 2


def test_read_whole_table_conflicts_with_any_append(table):
    a, b = _pair(table)
    _append(a, sample(1, 100))
    b.read_whole_table()
    _append(b, sample(1, 200))
    a.commit()
    _assert_lost(table, b, 1)


def test_compaction_does_not_conflict_with_append(table):
    a, b = _pair(table)
    files = _files_of(table, "b")
    a.remove_files(files, data_change=False)
    data = a.read_snapshot.to_arrow(where="part = 'b'")
    snap = a.read_snapshot
    a.add_files(write_table_files(table.storage, data, snap.protocol, snap.metadata, data_change=False))
    _append(b, sample(2, 300))
    b.commit()
    assert a.commit().version == 2
    assert len(table.snapshot().to_arrow()) == 12


def test_compaction_conflicts_with_delete_of_same_file(table):
    a, b = _pair(table)
    files = _files_of(table, "b")
    a.remove_files(files, data_change=False)
    b.remove_files(files.slice(0, 1))
    b.commit()
    _assert_lost(table, a, 1)


def test_same_domain_conflicts_other_domains_do_not(table):
    a, b = _pair(table)
    base = a.read_snapshot.metadata
    for txn in (a, b):
        txn.upgrade_protocol_for(base, extra=("domainMetadata",))
    a.commit()  # protocol upgrade first, then domain writers race
    c, d = _pair(table)
    c.set_domain_metadata("com.example.x", {"v": 1})
    d.set_domain_metadata("com.example.x", {"v": 2})
    c.commit()
    assert "domain" in str(_assert_lost(table, d, 2))
    e, f = _pair(table)
    e.set_domain_metadata("com.example.y", {"v": 1})
    f.set_domain_metadata("com.example.z", {"v": 1})
    e.commit()
    assert f.commit().version == 4


def test_concurrent_create_conflicts(location):
    uri, options = location
    t = dx.open_table(uri, options)
    from deltaexplore.core.operations import new_table_metadata

    txns = []
    for _ in range(2):
        txn = Transaction(t, operation="CREATE TABLE")
        txn.update_metadata(new_table_metadata(sample().schema))
        txns.append(txn)
    txns[0].commit()
    _assert_lost(t, txns[1], 0)


def test_max_retries_exhausted(table):
    a = Transaction(table, operation="WRITE")
    _append(a, sample(1, 100))
    for i in range(3):
        write_table(table, sample(1, 200 + i))
    with pytest.raises(dx.CommitConflictError, match="gave up"):
        a.commit(max_retries=0)
    assert table.latest_version() == 3


def _rival_wins(monkeypatch: pytest.MonkeyPatch, uri: str, options, times: int) -> list[float]:
    """Before each of our next `times` commit attempts, another writer appends (a real winner
    takes the version); the back-off waits are recorded instead of slept."""
    from deltaexplore.core.write import transaction as tx

    original = tx.Transaction._put
    state = {"left": times, "inside": False}

    def put(self: Transaction, version: int, content: bytes) -> str | None:
        if state["left"] and not state["inside"]:
            state["left"] -= 1
            state["inside"] = True
            try:
                write_table(uri, sample(2, 1000), storage_options=options)  # rows of part 'a' and 'b'
            finally:
                state["inside"] = False
        return original(self, version, content)

    sleeps: list[float] = []
    backoff = tx._backoff

    def recorded(attempt: int) -> float:
        sleeps.append(backoff(attempt))
        return 0.0  # recorded, not slept (time.sleep itself is everyone's: threads of the S3 server)

    monkeypatch.setattr(tx.Transaction, "_put", put)
    monkeypatch.setattr(tx, "_backoff", recorded)
    return sleeps


def test_blind_appends_outlast_many_lost_races_with_jittered_back_off(location, monkeypatch):
    from deltaexplore.core.write.transaction import BACKOFF_BASE_S, BACKOFF_MAX_S, BLIND_APPEND_RETRIES

    uri, options = location
    start = write_table(uri, sample(4), partition_by=["part"], storage_options=options).column("version")[0].as_py()
    lost = 40  # four times the budget of a commit that reads
    sleeps = _rival_wins(monkeypatch, uri, options, lost)
    m = write_table(uri, sample(2, 500), storage_options=options).to_pylist()[0]
    assert m["version"] == start + lost + 1  # after every rival
    assert len(sleeps) == lost and BLIND_APPEND_RETRIES > lost
    windows = [min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2**n) for n in range(lost)]
    assert all(0 <= s < w for s, w in zip(sleeps, windows))  # bounded by a doubling window
    assert len(set(sleeps)) == lost and max(sleeps[10:]) > windows[0]  # random, and the window grew
    history = dx.open_table(uri, options).history().to_pylist()
    assert next(h for h in history if h["version"] == m["version"])["is_blind_append"]


def test_a_commit_that_reads_gives_up_after_its_budget(location, monkeypatch):
    from deltaexplore.core.write.transaction import DEFAULT_RETRIES

    uri, options = location
    start = write_table(uri, sample(4), partition_by=["part"], storage_options=options).column("version")[0].as_py()
    _rival_wins(monkeypatch, uri, options, 40)
    data = pa.table({"id": pa.array([7], pa.int64()), "part": ["z"], "value": ["z"]})
    with pytest.raises(dx.CommitConflictError, match=f"after {DEFAULT_RETRIES + 1} attempts"):
        # replaces partition z only: the rivals' appends to a and b do not conflict with it
        write_table(uri, data, mode="overwrite", predicate="part = 'z'", storage_options=options)
    assert dx.open_table(uri, options).latest_version() == start + DEFAULT_RETRIES + 1
