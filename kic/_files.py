"""Writing result files so that none is ever half written (internal)."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(path, write: Callable) -> None:
    """``write(file)`` into a fresh temporary file beside ``path``, then rename it
    over ``path`` (atomic on one file system): a reader, or a crash, sees the old
    file or the new one, never a part of one, and concurrent writers never share a
    temporary file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
