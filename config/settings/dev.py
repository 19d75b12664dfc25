"""Local development and the run command's embedded default."""

from config.settings.base import *  # noqa: F403
