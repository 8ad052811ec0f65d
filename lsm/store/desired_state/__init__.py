"""Desired-state versions: the copy-on-write tables and every statement on them."""
