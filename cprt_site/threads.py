"""[decision] One BLAS / OpenMP thread per process, unless the environment names another number.

The figures (scoring.metrics, scoring.agreement_ci) are many small matrix products, and the worker runs a
process per core: with the libraries' default (a thread per core in every process) the threads of one
product spin against each other and against the other processes. At 30,000 images the jobs of the
leaderboard took 17.5-18.1 s of CPU and 15.9-16.3 s on a 2-core machine with the default, 9.3-10.3 s of CPU
and 10.1-11.1 s with one thread (issue 37). One thread also makes the last bit of a product independent of
the machine's number of cores. Imported first by the project package (cprt_site/__init__.py), before
anything loads numpy; an operator's own OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS win.
"""
from __future__ import annotations

import os

VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

for _name in VARIABLES:
    os.environ.setdefault(_name, "1")
