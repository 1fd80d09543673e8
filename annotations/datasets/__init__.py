"""Dataset versions: named, frozen sets of images built from VISPR labels by a recipe (spec
vispr-and-benchmarks.md §3), and the job that builds them."""
