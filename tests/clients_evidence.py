"""The clients matrix's evidence: which features a client reads, as its reads of real tables show
it (tests/inspect/test_inspect_features.py on the corpus, tests/write/test_clients_matrix.py on the
tables this library wrote), and error kinds as `inspect.clients` declares them."""

from __future__ import annotations

from deltaexplore.core.protocol.actions import Protocol
from deltaexplore.core.protocol.features import FEATURES


def read_evidence(results: dict[str, dict[str, bool]], protocols: dict[str, Protocol]) -> dict[str, dict[str, bool]]:
    """client -> {feature: reads it} from `results` (table -> client -> read it) and each table's
    protocol. Only features a table lists (reader 3 / writer 7) count: a read table shows each
    listed feature is read (a reader-writer feature where readerFeatures list it); a refused one
    shows that its one listed reader feature not shown read elsewhere is not."""
    listed: dict[str, tuple[set[str], set[str]]] = {}
    for root in results:
        p = protocols[root]
        readers = set(p.reader_features or ()) if p.min_reader_version >= 3 else set()
        writers = set(p.writer_features or ()) if p.min_writer_version >= 7 else set()
        writer_only = {f for f in writers if f in FEATURES and not FEATURES[f].reader_writer}
        listed[root] = (readers, readers | writer_only)  # a reader-writer feature is read where readers list it
    out: dict[str, dict[str, bool]] = {}
    for root, by_client in results.items():
        for client, ok in by_client.items():
            if ok:
                out.setdefault(client, {}).update(dict.fromkeys(listed[root][1], True))
    for root, by_client in results.items():
        for client, ok in by_client.items():
            unexplained = listed[root][0] - {f for f, r in out.get(client, {}).items() if r}
            if not ok and len(unexplained) == 1:
                out.setdefault(client, {})[unexplained.pop()] = False
    return out


def same_kind(seen: str, declared: str) -> bool:
    """`seen` (`<class>: <message>`) is the declared `<class>: <words of the message>`."""
    cls, _, words = declared.partition(": ")
    return seen == declared or (seen.startswith(f"{cls}: ") and words in seen)
