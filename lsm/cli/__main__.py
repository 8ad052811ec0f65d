"""``python -m lsm.cli``: the ``lsm`` command (tests start server, worker and agent processes this way)."""

from lsm.cli import main

main()
