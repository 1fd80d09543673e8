from inference import benchmarks


class ClassifiersConfig(benchmarks.BenchmarkConfig):
    """Local classifiers (binary private/public): found by the benchmark registry through `benchmark`."""

    name = "benchmarks.classifiers"
    label = "classifiers"
    verbose_name = "Local classifiers (private/public)"
    benchmark = "benchmarks.classifiers.declaration.LocalClassifiers"
