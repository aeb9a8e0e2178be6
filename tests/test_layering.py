"""Dependencies point one way: the core never imports UI or Spark libraries."""

from __future__ import annotations

import subprocess
import sys


def test_core_import_leaves_ui_and_spark_out():
    code = (
        "import sys, deltaexplore, deltaexplore.core.table, deltaexplore.core.scan, deltaexplore.core.cdf;"
        "bad=[m for m in ('IPython','altair','ipywidgets','anywidget','pyspark') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
