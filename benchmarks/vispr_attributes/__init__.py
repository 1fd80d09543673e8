"""VISPR attribute prediction (the VPA task, spec vispr-and-benchmarks.md §7), one folder: its run kind,
figures, pages, launch fields and demo data. docs/vispr-attributes.md describes it."""
