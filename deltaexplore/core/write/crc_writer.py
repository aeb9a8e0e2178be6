"""Writing version checksum files (`_delta_log/<v>.crc`).

A checksum file records the table state after a commit: file count and bytes, protocol,
metadata, set transactions, domains, in-commit timestamp, a file size histogram and deletion
vector counts. It is computed either from the full state (the reconciled add actions) or
incrementally from the previous version's checksum and one commit's actions. It is written with
put-if-absent, so an existing checksum is never replaced.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.crc_reader import DELETED_RECORD_BINS
from deltaexplore.core.protocol.actions import DomainMetadata, Metadata, Protocol, Txn
from deltaexplore.storage import Storage

__all__ = ["FILE_SIZE_BINS", "checksum_after_commit", "checksum_from_state", "checksum_path", "write_checksum"]

_KB, _MB, _GB = 1 << 10, 1 << 20, 1 << 30
#: bin boundaries of `fileSizeHistogram` (bytes; the first is 0 as the protocol requires)
FILE_SIZE_BINS: list[int] = (
    [0]
    + [8 * _KB << i for i in range(9)]  # 8 KB .. 2 MB
    + [i * 4 * _MB for i in range(1, 65)]  # 4 MB .. 256 MB
    + [384 * _MB, 512 * _MB, 768 * _MB, _GB, 2 * _GB, 4 * _GB, 8 * _GB, 16 * _GB, 32 * _GB, 64 * _GB, 128 * _GB, 256 * _GB]
)
#: lower bounds of the 10 bins of `deletedRecordCountsHistogramOpt` (the reader's definition)
_DELETED_BINS = list(DELETED_RECORD_BINS)


def checksum_path(version: int) -> str:
    return f"_delta_log/{version:020d}.crc"


def _histogram(sizes: np.ndarray, sign: int = 1) -> tuple[np.ndarray, np.ndarray]:
    bins = np.searchsorted(np.asarray(FILE_SIZE_BINS, dtype=np.int64), sizes, side="right") - 1
    counts = np.zeros(len(FILE_SIZE_BINS), dtype=np.int64)
    totals = np.zeros(len(FILE_SIZE_BINS), dtype=np.int64)
    np.add.at(counts, bins, sign)
    np.add.at(totals, bins, sign * sizes)
    return counts, totals


def _deleted_histogram(cardinalities: np.ndarray, sign: int = 1) -> np.ndarray:
    bins = np.searchsorted(np.asarray(_DELETED_BINS, dtype=np.int64), cardinalities, side="right") - 1
    counts = np.zeros(len(_DELETED_BINS), dtype=np.int64)
    np.add.at(counts, bins, sign)
    return counts


def _sizes(t: pa.Table) -> np.ndarray | None:
    if t.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    col = t.column("size").combine_chunks()
    if col.null_count:
        return None
    return col.to_numpy(zero_copy_only=False).astype(np.int64)


def _cardinalities(t: pa.Table) -> np.ndarray:
    """DV cardinality of every file (0 without a DV)."""
    if t.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    dv = t.column("deletionVector").combine_chunks()
    if dv.null_count == len(dv):
        return np.zeros(len(dv), dtype=np.int64)
    card = pc.if_else(pc.is_valid(dv), dv.field("cardinality"), pa.scalar(0, pa.int64()))
    return pc.fill_null(card, 0).to_numpy(zero_copy_only=False).astype(np.int64)


def _common(
    protocol: Protocol,
    metadata: Metadata,
    txns: dict[str, Txn],
    domains: dict[str, DomainMetadata],
    ict: int | None,
    txn_id: str | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "numMetadata": 1,
        "numProtocol": 1,
        "metadata": metadata.to_json(),
        "protocol": protocol.to_json(),
        "setTransactions": [
            {k: v for k, v in (("appId", t.app_id), ("version", t.version), ("lastUpdated", t.last_updated)) if v is not None}
            for t in sorted(txns.values(), key=lambda t: t.app_id)
        ],
        "domainMetadata": [
            {"domain": d.domain, "configuration": d.configuration, "removed": False}
            for d in sorted(domains.values(), key=lambda d: d.domain)
            if not d.removed
        ],
    }
    if txn_id is not None:
        out["txnId"] = txn_id
    if ict is not None:
        out["inCommitTimestampOpt"] = ict
    return out


def checksum_from_state(
    protocol: Protocol,
    metadata: Metadata,
    adds: pa.Table,
    *,
    txns: dict[str, Txn] | None = None,
    domains: dict[str, DomainMetadata] | None = None,
    ict: int | None = None,
    txn_id: str | None = None,
) -> dict[str, Any] | None:
    """The checksum object of a table state given by its active add actions (None when a size
    is unknown)."""
    sizes = _sizes(adds)
    if sizes is None:
        return None
    counts, totals = _histogram(sizes)
    card = _cardinalities(adds)
    out = _common(protocol, metadata, txns or {}, domains or {}, ict, txn_id)
    out.update(
        {
            "tableSizeBytes": int(sizes.sum()),
            "numFiles": len(sizes),
            "fileSizeHistogram": {
                "sortedBinBoundaries": FILE_SIZE_BINS,
                "fileCounts": counts.tolist(),
                "totalBytes": totals.tolist(),
            },
            "numDeletedRecordsOpt": int(card.sum()),
            "numDeletionVectorsOpt": int((card > 0).sum()),
            "deletedRecordCountsHistogramOpt": {"deletedRecordCounts": _deleted_histogram(card).tolist()},
        }
    )
    return out


def checksum_after_commit(
    previous: dict[str, Any],
    protocol: Protocol,
    metadata: Metadata,
    adds: pa.Table,
    removes: pa.Table,
    *,
    txns: dict[str, Txn],
    domains: dict[str, DomainMetadata],
    ict: int | None,
    txn_id: str | None,
) -> dict[str, Any] | None:
    """The checksum after one commit, from the previous version's checksum (None when the
    previous one lacks what is needed or a removed file's size is unknown).

    Every remove must refer to a file of the previous state and every add be a new logical
    file, as the transactions of this library guarantee.
    """
    try:
        num_files = int(previous["numFiles"])
        size = int(previous["tableSizeBytes"])
    except (KeyError, TypeError, ValueError):
        return None
    add_sizes, rem_sizes = _sizes(adds), _sizes(removes)
    if add_sizes is None or rem_sizes is None:
        return None
    out = _common(protocol, metadata, txns, domains, ict, txn_id)
    out["tableSizeBytes"] = size + int(add_sizes.sum()) - int(rem_sizes.sum())
    out["numFiles"] = num_files + len(add_sizes) - len(rem_sizes)
    hist = previous.get("fileSizeHistogram")
    if isinstance(hist, dict) and hist.get("sortedBinBoundaries") == FILE_SIZE_BINS:
        c1, t1 = _histogram(add_sizes)
        c2, t2 = _histogram(rem_sizes, -1)
        out["fileSizeHistogram"] = {
            "sortedBinBoundaries": FILE_SIZE_BINS,
            "fileCounts": (np.asarray(hist["fileCounts"], dtype=np.int64) + c1 + c2).tolist(),
            "totalBytes": (np.asarray(hist["totalBytes"], dtype=np.int64) + t1 + t2).tolist(),
        }
    add_card, rem_card = _cardinalities(adds), _cardinalities(removes)
    if previous.get("numDeletedRecordsOpt") is not None and previous.get("numDeletionVectorsOpt") is not None:
        out["numDeletedRecordsOpt"] = int(previous["numDeletedRecordsOpt"]) + int(add_card.sum()) - int(rem_card.sum())
        out["numDeletionVectorsOpt"] = (
            int(previous["numDeletionVectorsOpt"]) + int((add_card > 0).sum()) - int((rem_card > 0).sum())
        )
    prev_hist = previous.get("deletedRecordCountsHistogramOpt")
    if isinstance(prev_hist, dict) and isinstance(prev_hist.get("deletedRecordCounts"), list):
        counts = np.asarray(prev_hist["deletedRecordCounts"], dtype=np.int64)
        if len(counts) == len(_DELETED_BINS):
            counts = counts + _deleted_histogram(add_card) + _deleted_histogram(rem_card, -1)
            out["deletedRecordCountsHistogramOpt"] = {"deletedRecordCounts": counts.tolist()}
    if out["numFiles"] < 0 or out["tableSizeBytes"] < 0:
        return None
    return out


def write_checksum(storage: Storage, version: int, checksum: dict[str, Any]) -> bool:
    """Write `<version>.crc` unless it exists. Returns True when this call wrote it."""
    data = json.dumps(checksum, separators=(",", ":")).encode("utf-8")
    return storage.put_if_absent(checksum_path(version), data)
