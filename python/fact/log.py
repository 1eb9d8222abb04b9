"""The ``fact`` logger, and warnings said once per process.

The library never prints: what it does goes to ``logging.getLogger("fact")`` (a
``NullHandler`` is attached, so nothing shows unless the application configures logging;
``fact`` the command does, at INFO, and at DEBUG with ``-v``). What a user must see even
without logging configured — the model runs unchanged, kernels stay off — is also a Python
warning, said once per process per reason (:func:`warn_once`).
"""

from __future__ import annotations

import logging
import threading
import warnings

__all__ = ["logger", "warn_once", "FactWarning"]

logger = logging.getLogger("fact")
logger.addHandler(logging.NullHandler())

_said: set[str] = set()
_lock = threading.Lock()


class FactWarning(UserWarning):
    """A FACT decision the user should know about: a graph or pattern runs as ATen, an
    artifact was built for another GPU, and why."""


def warn_once(key: str, message: str) -> bool:
    """Log ``message`` at WARNING and raise it as a :class:`FactWarning`, the first time
    ``key`` is seen in this process; later calls with the same key log it at DEBUG only.

    Returns:
        True when this call said it (the first time for ``key``).
    """
    with _lock:
        first = key not in _said
        _said.add(key)
    if not first:
        logger.debug("%s", message)
        return False
    logger.warning("%s", message)
    warnings.warn(message, FactWarning, stacklevel=3)
    return True
