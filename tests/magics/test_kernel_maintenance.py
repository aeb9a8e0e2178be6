"""Maintenance from a cell of a real Jupyter kernel: no Spark session → the local engine (no
JVM, pyspark never imported); one progress bar (one display, updated in place, its fraction
only moving forward to 100%), no text bars; the result is the operation's metrics table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

pytestmark = pytest.mark.slow


def test_optimize_in_a_kernel_shows_one_forward_moving_bar_and_the_metrics(tmp_path):
    jupyter_client = pytest.importorskip("jupyter_client")
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    messages: list[dict] = []
    try:

        def run(code: str) -> None:
            messages.clear()

            def hook(msg: dict) -> None:
                if msg["msg_type"] == "error":
                    raise AssertionError("\n".join(msg["content"]["traceback"]))
                messages.append(msg)

            reply = kc.execute_interactive(code, timeout=180, output_hook=hook)
            assert reply["content"]["status"] == "ok"

        run(
            f"import sys; sys.path.insert(0, {str(NOTEBOOKS)!r})\n"
            "import demo_tables\n"
            "%load_ext deltaexplore\n"
            f"path = demo_tables.build_sales({str(tmp_path / 'sales')!r})"
        )
        run("%delta optimize {path} --run")
        shown = [
            m for m in messages if m["msg_type"] == "display_data" and "<progress" in m["content"]["data"].get("text/html", "")
        ]
        updates = [m for m in messages if m["msg_type"] == "update_display_data"]
        assert len(shown) == 1, "one progress display"
        display_id = shown[0]["content"]["transient"]["display_id"]
        assert updates and all(u["content"]["transient"]["display_id"] == display_id for u in updates)
        fractions = [
            float(re.search(r"<progress value='([0-9.]+)'", m["content"]["data"]["text/html"]).group(1))  # type: ignore[union-attr]
            for m in shown + updates
        ]
        assert fractions == sorted(fractions) and fractions[-1] == 1.0
        streams = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
        assert "[deltaexplore]" not in streams  # no text bars beside the HTML one
        result = next(m for m in messages if m["msg_type"] == "execute_result")["content"]["data"]
        assert "num_files_removed" in result["text/html"] and "num_files_added" in result["text/html"]
        assert "local" in result["text/html"] and "no active Spark session" in result["text/html"]
        run("print('pyspark' in sys.modules)")
        assert [m["content"]["text"].strip() for m in messages if m["msg_type"] == "stream"] == ["False"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
