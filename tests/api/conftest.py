from tests.api.fixtures import engine, http, url

__all__ = ["engine", "http", "url"]
