"""Build hook for the one compiled part: the stats search kernel of `deltaexplore.inspect.fast_stats`.

Everything else is configured in pyproject.toml. The extension is optional: without a C compiler
the package installs all the same and `fast_stats` uses its numpy/polars path (same results).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "deltaexplore.inspect._stats_kernel",
            ["deltaexplore/inspect/_stats_kernel.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
