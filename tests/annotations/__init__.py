"""Tests of the annotations app: labeling pages and queue, accounts, imports, adjudication, home."""
