"""Credentials in storage options never leave the storage: their values are cut out of every
message that could carry them (errors of the filesystem drivers, reprs)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

__all__ = ["REDACTED", "redact", "secret_values"]

REDACTED = "***"
#: option names whose values are credentials (fsspec/s3fs/adlfs/gcsfs spellings, nested
#: `client_kwargs`/`credentials` included): keys, secrets, tokens, passwords, SAS strings,
#: connection strings (which hold account keys), signatures
_SECRET_NAME = re.compile(r"key|secret|token|passw|pwd|sas|credential|signature|auth|session|connection|private|cert", re.I)
_MIN_LENGTH = 4  # shorter values ("1", "on") would cut random text without hiding anything


def secret_values(options: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The credential values of `options` (strings under credential-like names, at any depth;
    every string inside a credential-named dict or list), longest first."""
    found: set[str] = set()

    def visit(value: Any, secret: bool) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                visit(v, secret or bool(_SECRET_NAME.search(str(k))))
        elif isinstance(value, (list, tuple, set)):
            for v in value:
                visit(v, secret)
        elif secret and isinstance(value, (str, bytes)):
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            if len(text) >= _MIN_LENGTH:
                found.add(text)

    visit(options or {}, False)
    return tuple(sorted(found, key=len, reverse=True))


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of a secret (and of its URL-quoted form) replaced by `***`."""
    for secret in secrets:
        for form in {secret, quote(secret, safe="")}:
            if form in text:
                text = text.replace(form, REDACTED)
    return text
