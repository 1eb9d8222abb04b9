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


def warn_once(key: str, message: str, always_log: bool = False) -> bool:
    """Log ``message`` at WARNING and raise it as a :class:`FactWarning`, the first time
    ``key`` is seen in this process; later calls with the same key log it at DEBUG only
    (at WARNING again with ``always_log``, e.g. for what each run must say).

    Returns:
        True when this call raised the warning (the first time for ``key``).
    """
    with _lock:
        first = key not in _said
        _said.add(key)
    logger.log(logging.WARNING if first or always_log else logging.DEBUG, "%s", message)
    if first:
        warnings.warn(message, FactWarning, stacklevel=3)
    return first
