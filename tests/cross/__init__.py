"""Cross-cutting suites: permission matrix, malformed input, API and schemathesis, compose, nginx, security."""
