from inference import benchmarks


class VisprAttributesConfig(benchmarks.BenchmarkConfig):
    """VISPR attribute prediction: found by the benchmark registry through `benchmark`."""

    name = "benchmarks.vispr_attributes"
    label = "vispr_attributes"
    verbose_name = "VISPR attribute prediction"
    benchmark = "benchmarks.vispr_attributes.declaration.VisprAttributes"
