"""The running engine: configuration, environments, and the facade the API and CLI call."""
