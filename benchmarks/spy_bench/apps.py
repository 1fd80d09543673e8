from inference import benchmarks


class SpyBenchConfig(benchmarks.BenchmarkConfig):
    """SPY-Bench: found by the benchmark registry through `benchmark`."""

    name = "benchmarks.spy_bench"
    label = "spy_bench"
    verbose_name = "SPY-Bench"
    benchmark = "benchmarks.spy_bench.declaration.SpyBench"
