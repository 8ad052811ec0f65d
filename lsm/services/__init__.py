"""The service loop shared by compile workers, the scheduler and (next) deploy agents and discovery."""

from lsm.errors import TimeLimitExceeded
from lsm.services.loop import ServiceLoop, Work, WorkSource

__all__ = ["ServiceLoop", "TimeLimitExceeded", "Work", "WorkSource"]
