"""Small models used by tests of the engine itself (the examples/ models are tested too)."""
