"""Tests of the demo app: seeding and run_demo."""
