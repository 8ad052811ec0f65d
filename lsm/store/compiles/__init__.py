"""Compile requests: the queue, request parameters, what exports record, failed exports."""
