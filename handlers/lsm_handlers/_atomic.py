"""Writing a file so that a reader sees the old content or the new one, never half of either.

Why here: ``std::File`` and the config-file handler both write files that other programs (and
the next ``read``) may open at any moment, and an agent may be killed mid-write. A temporary
file in the same directory, renamed over the target, is atomic on POSIX.

Why no ``fsync``: it made a first deploy of many files several times slower, and it buys
durability across a power loss, not atomicity: readers never see a partial file either way.
A file lost to a crash is drift, which the next deploy's ``read`` sees and repairs.
Pass ``durable=True`` where a write must survive a power loss once the deploy reports it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: Path, data: bytes, mode: int, *, durable: bool = False) -> None:
    """Replace ``path`` by a file holding ``data`` with permission bits ``mode``."""
    # a short name of its own: a target name of the longest length still has room beside it
    fd, temp = tempfile.mkstemp(prefix=".lsm-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            if durable:
                os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
