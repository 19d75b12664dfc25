"""The browser fixtures live in web.tests.browser, a plugin for the whole suite.

They are named here too, for test modules that import them from this module.
"""

from web.tests.browser import chromium, gunicorn_server, page

__all__ = ["chromium", "gunicorn_server", "page"]
