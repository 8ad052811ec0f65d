"""The service loop shared by compile workers, the scheduler, deploy agents and the webhook sources."""

from lsm.errors import TimeLimitExceeded
from lsm.services.loop import ServiceLoop, Work, WorkSource

__all__ = ["ServiceLoop", "TimeLimitExceeded", "Work", "WorkSource"]
