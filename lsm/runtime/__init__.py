"""The running engine: configuration, environments, and the one composition root (``wiring``)."""
