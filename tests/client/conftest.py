from tests.api.fixtures import engine, url

__all__ = ["engine", "url"]
