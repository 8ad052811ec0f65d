"""Service instances: their rows, events, relations, change markers, compile reads."""
