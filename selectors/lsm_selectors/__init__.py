"""Bundled selectors, found through the ``lsm.selectors`` entry point (never imported by the core)."""
