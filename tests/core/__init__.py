"""Tests of the base layer and the project package: settings, request costs (auth, sessions), the broker."""
