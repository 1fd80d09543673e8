"""Local fake model servers speaking the providers' wire formats, for tests and the benchmark."""
