"""lsm-engine: a service lifecycle engine in the style of Inmanta LSM."""
