from inference import benchmarks


class MultiprivConfig(benchmarks.BenchmarkConfig):
    """MultiPriv individual level: found by the benchmark registry through `benchmark`."""

    name = "benchmarks.multipriv"
    label = "multipriv"
    verbose_name = "MultiPriv individual level"
    benchmark = "benchmarks.multipriv.declaration.MultiPriv"
