"""The secret key of a server run from a data folder: made once, kept in the folder, readable by its owner only."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

SECRET_KEY_FILE = "secret_key"


def data_folder_secret_key(folder: Path) -> str:
    """The key in `folder/secret_key`, generated on first use (mode 0600).

    Written to a private draft and linked into place, so two processes starting at once (gunicorn's workers,
    the Celery worker) both read the one key that won, never a half-written file.
    """
    path = folder / SECRET_KEY_FILE
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        draft = folder / f".{SECRET_KEY_FILE}.{os.getpid()}"
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(64) + "\n")
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process won the race; its key is the key
        finally:
            draft.unlink()
    return path.read_text().strip()
