"""Build hook for the one compiled part: the stats search kernel of `deltaexplore.core.scan.stats_search`.

Everything else is configured in pyproject.toml. The extension is optional: without a C compiler
the package installs all the same and `stats_search` uses its numpy/polars path (same results).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "deltaexplore.core.scan._stats_kernel",
            ["deltaexplore/core/scan/_stats_kernel.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
