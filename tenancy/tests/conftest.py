import pytest


@pytest.fixture(autouse=True)
def no_embedder(settings):
    """Isolation does not depend on vectors; loading the model would only slow these tests."""
    settings.EMBEDDER = "none"
