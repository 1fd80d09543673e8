"""Helpers shared by tests (not tests themselves): factories, labeling helpers, real workers, permission cases, data builders."""
