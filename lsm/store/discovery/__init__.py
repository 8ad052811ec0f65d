"""Discovery: the results of discovery runs and their adoptions."""
