"""Desired-state tables (placeholder until the desired-state store lands)."""
