"""Tests of lsm.lifecycle: specs, bundled lifecycles, machines, operations, loading, rendering."""
