"""Deployment: per-resource deploy state, the planner's statements, claims and feedback."""
