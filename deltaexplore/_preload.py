"""pandas imported in the background while the first table opens.

pyarrow imports pandas, when it is installed, on its first conversion of a Python value (any
`pa.scalar("x")` or `pc.equal(column, "x")`): 0.3-0.6 s of a fresh process or kernel, spent
in the middle of the first open. Started on a thread when deltaexplore is imported, it runs
while the open waits on the disk or the network or runs Arrow code that releases the GIL
(reading the checkpoint); the open then finds it imported (or waits for the rest of it).
`DELTAEXPLORE_PRELOAD=0` turns it off.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading

__all__ = ["preload_pandas"]


def preload_pandas() -> None:
    """Start importing pandas on a daemon thread, unless it is imported, absent or turned off."""
    if os.environ.get("DELTAEXPLORE_PRELOAD") == "0" or "pandas" in sys.modules:
        return
    if importlib.util.find_spec("pandas") is None:
        return

    def run() -> None:
        try:
            import pandas  # noqa: F401
        except Exception:  # noqa: BLE001 - a broken pandas fails where pyarrow imports it, as before
            pass

    threading.Thread(target=run, name="deltaexplore-preload", daemon=True).start()
