"""Compliance reports: the report, its parts per agent name (claimed by agent processes), its rows."""
