"""Environments: their settings and the emergency brake (halts, paused agents)."""
