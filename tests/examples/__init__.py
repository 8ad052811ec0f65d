"""Tests of the runnable models in examples/."""
