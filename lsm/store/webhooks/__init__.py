"""Webhooks: receivers, queued deliveries and their outcomes."""
