"""Where the client finds its token: ``--token``, ``LSM_TOKEN``, or the token file.

The file is ``$LSM_TOKEN_FILE``, else ``$XDG_CONFIG_HOME/lsm/token`` (``~/.config/lsm/token``):
one line, the token. It must be readable by its owner only (``chmod 600``): a token readable by
the group or the world is refused with a message saying how to fix it, never used, because
whoever can read it can act as it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lsm.errors import ConfigurationError

TOKEN_ENV_VAR = "LSM_TOKEN"
TOKEN_FILE_ENV_VAR = "LSM_TOKEN_FILE"


def token_file() -> Path:
    """The token file's path (it may not exist)."""
    explicit = os.environ.get(TOKEN_FILE_ENV_VAR)
    if explicit:
        return Path(explicit).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "lsm" / "token"


def read_token_file(path: Path) -> str | None:
    """The token in ``path``; ``None`` when there is no such file; ``ConfigurationError`` when it is
    readable by others than its owner or empty."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigurationError(
            f"can not read the token file {str(path)!r}: {exc}", path=str(path)
        ) from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigurationError(
            f"refusing to use the token file {str(path)!r}: it is accessible by group or others "
            f"(mode {stat.S_IMODE(info.st_mode):04o}); run: chmod 600 {path}",
            path=str(path),
        )
    token = path.read_text().strip()
    if not token:
        raise ConfigurationError(f"the token file {str(path)!r} is empty", path=str(path))
    return token


def resolve_token(explicit: str | None = None) -> str | None:
    """The token to send: ``explicit``, else ``$LSM_TOKEN``, else the token file; ``None`` if none."""
    if explicit:
        return explicit
    from_env = os.environ.get(TOKEN_ENV_VAR)
    if from_env:
        return from_env.strip()
    return read_token_file(token_file())
