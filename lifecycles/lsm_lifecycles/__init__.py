"""Bundled lifecycles as YAML data; found through the ``lsm.lifecycles`` entry point."""

from pathlib import Path

LIFECYCLE_DIR = Path(__file__).parent


def lifecycle_files() -> list[Path]:
    """Every bundled lifecycle file, sorted by name."""
    return sorted(LIFECYCLE_DIR.glob("*.yaml"))
