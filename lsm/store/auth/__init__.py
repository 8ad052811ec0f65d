"""Authentication: API tokens, console sessions and their tables."""
