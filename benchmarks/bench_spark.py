"""Spark layer benchmark: reported, never asserted.

1. `dx.spark.read` of a table with deletion vectors vs `spark.read.parquet` of the same files
   (the same rows before the DVs; target: at most 1.2x the plain parquet read). Each read is
   executed with the `noop` sink (every column materialized, nothing collected), best of 3.
2. OPTIMIZE throughput (MB/s of input) on a local table of many small files (1 GB by default).

Tables are generated under benchmarks/tables/ (git-ignored); results go to
benchmarks/results/spark.md.

    python benchmarks/bench_spark.py [--read-rows 20000000] [--optimize-mb 1024] [--only read|optimize]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

import deltaexplore as dx
import deltaexplore.spark as dxs

HERE = Path(__file__).resolve().parent
TABLES = HERE / "tables"
RESULTS = HERE / "results"


def _data(spark, rows: int, files: int):
    from pyspark.sql import functions as F  # noqa: TID251 - benchmark of the Spark layer

    return (
        spark.range(0, rows, numPartitions=files)
        .withColumn("x", F.rand(seed=1))
        .withColumn("y", (F.rand(seed=2) * 1000).cast("int"))
        .withColumn("s", F.sha2(F.col("id").cast("string"), 256).substr(1, 24))
    )


def _best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def bench_read(spark, rows: int) -> dict:
    root = TABLES / "spark_dv"
    shutil.rmtree(root, ignore_errors=True)
    conf = {"delta.enableDeletionVectors": "true"}
    dxs.write(spark, _data(spark, rows, 16), str(root), configuration=conf, target_file_size=64 << 20)
    dxs.delete(spark, str(root), "y < 100")  # ~10% of the rows of every file, as DVs
    snap = dx.open_table(str(root)).snapshot()
    files = snap.add_actions()
    with_dv = sum(1 for d in files.column("deletionVector").to_pylist() if d)
    locations = [f"file://{root}/{p}" for p in files.column("path").to_pylist()]

    def plain():
        spark.read.parquet(*locations).write.format("noop").mode("overwrite").save()

    def delta():
        dxs.read(spark, str(root)).write.format("noop").mode("overwrite").save()

    def metadata_columns():  # what any per-file DV filter must read besides the data
        from pyspark.sql import functions as F  # noqa: TID251 - benchmark of the Spark layer

        df = spark.read.parquet(*locations)
        df.select("*", F.col("_metadata.row_index"), F.col("_metadata.file_size")).write.format("noop").mode("overwrite").save()

    t0 = time.perf_counter()
    dxs.read(spark, str(root))
    plan_s = time.perf_counter() - t0
    plain(), delta(), metadata_columns()  # warm up
    t_plain, t_delta, t_meta = _best(plain, 5), _best(delta, 5), _best(metadata_columns, 5)
    kept = dxs.read(spark, str(root)).count()
    return {
        "rows": rows,
        "rows_after_dvs": kept,
        "files": files.num_rows,
        "files_with_dv": with_dv,
        "bytes": int(sum(files.column("size").to_pylist())),
        "parquet_s": t_plain,
        "dx_read_s": t_delta,
        "metadata_columns_s": t_meta,
        "plan_s": plan_s,
        "ratio": t_delta / t_plain,
    }


def bench_optimize(spark, megabytes: int) -> dict:
    root = TABLES / "spark_optimize"
    shutil.rmtree(root, ignore_errors=True)
    rows_per_mb = 36_000  # about 1 MB of parquet per 36k rows of this data
    rows = megabytes * rows_per_mb
    files = max(8, megabytes // 8)  # ~8 MB files
    t = time.perf_counter()
    dxs.write(spark, _data(spark, rows, files), str(root), target_file_size=16 << 20)
    gen = time.perf_counter() - t
    snap = dx.open_table(str(root)).snapshot()
    size = int(sum(snap.add_actions().column("size").to_pylist()))
    load_before = os.getloadavg()[0]
    t = time.perf_counter()
    m = dxs.optimize(spark, str(root), target_size=256 << 20)
    seconds = time.perf_counter() - t
    load_after = os.getloadavg()[0]
    after = dx.open_table(str(root)).snapshot()
    assert after.to_arrow(columns=["id"]).num_rows == rows  # sanity, not a timing assertion
    return {
        "input_mb": size / 1e6,
        "files_before": snap.add_actions().num_rows,
        "files_after": after.add_actions().num_rows,
        "seconds": seconds,
        "mb_per_s": size / 1e6 / seconds,
        "generate_s": gen,
        "files_removed": m.column("num_files_removed")[0].as_py(),
        "load_1min": [round(load_before, 2), round(load_after, 2)],
    }


def render(spark_version: str, read: dict | None, opt: dict | None) -> str:
    text = f"""# Spark benchmark

Machine: 2 cores, `local[2]`, PySpark {spark_version}. Reported, never asserted.
"""
    if read:
        text += f"""
## `dx.spark.read` of a table with deletion vectors vs `spark.read.parquet` of the same files

{read["rows"]:,} rows in {read["files"]} files ({read["bytes"] / 1e6:.0f} MB), {read["files_with_dv"]} with a DV
({read["rows"] - read["rows_after_dvs"]:,} rows deleted). `noop` sink, best of 5.

| read | seconds |
|---|---|
| `spark.read.parquet` (all rows, no DVs) | {read["parquet_s"]:.2f} |
| `dx.spark.read` (DVs applied) | {read["dx_read_s"]:.2f} |
| ratio (target ≤ 1.2) | {read["ratio"]:.2f}x |
"""
        if "metadata_columns_s" in read:
            text += f"""
For scale: `spark.read.parquet` of the same files also selecting `_metadata.row_index` and
`_metadata.file_size` (what a per-file DV filter has to read) takes {read["metadata_columns_s"]:.2f} s
({read["metadata_columns_s"] / read["parquet_s"]:.2f}x); building the `dx.spark.read` plan on the driver (log replay,
DV decoding, bitmap literals) takes {read["plan_s"]:.2f} s of each read. DVs are applied as one bitmap per
file tested on `_metadata.row_index`; the file is recognised by its size (no per-row path string).
"""
    if opt:
        text += f"""
## OPTIMIZE throughput

{opt["input_mb"]:.0f} MB in {opt["files_before"]} files → {opt["files_after"]} files (target 256 MB):
{opt["seconds"]:.1f} s, **{opt["mb_per_s"]:.1f} MB/s** of input (generating the table took {opt["generate_s"]:.1f} s).
"""
        if "load_1min" in opt:
            before, after = opt["load_1min"]
            text += f"""
Files are written by Spark's parquet writer (one task per bin, no shuffle; zstd level 1). The
machine is shared: 1-minute load average {before:.1f} before and {after:.1f} after the run (2 cores).
"""
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--read-rows", type=int, default=20_000_000)
    ap.add_argument("--optimize-mb", type=int, default=1024)
    ap.add_argument("--only", choices=["read", "optimize"], help="run one part; the other keeps its last result")
    args = ap.parse_args()
    TABLES.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    saved = RESULTS / "spark.json"
    results = json.loads(saved.read_text()) if saved.exists() else {}
    spark = dxs.get_spark(master="local[2]", config={"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "6g"})
    if args.only in (None, "read"):
        results["read"] = bench_read(spark, args.read_rows)
        print("read", results["read"], flush=True)
    if args.only in (None, "optimize"):
        results["optimize"] = bench_optimize(spark, args.optimize_mb)
        print("optimize", results["optimize"], flush=True)
    saved.write_text(json.dumps(results, indent=1))
    text = render(spark.version, results.get("read"), results.get("optimize"))
    (RESULTS / "spark.md").write_text(text)
    print(text)
    spark.stop()


if __name__ == "__main__":
    main()
