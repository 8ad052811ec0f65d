"""The API's request and response models, shared by the server and the client.

Why a package of its own: the client (``lsm.client``) must import these without pulling in
the server side (SQLAlchemy, SQLModel, FastAPI). Nothing here may import from another
``lsm`` package but ``lsm.errors``.
"""

from lsm.schemas.compiles import CompileKind, CompileStatus

__all__ = ["CompileKind", "CompileStatus"]
