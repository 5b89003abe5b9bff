"""mrfq: packet-level multi-resource fair queueing, against the fluid allocations.

The installed distribution provides this one import package; its parts are subpackages,
layered bottom to top (nothing imports upward):

* :mod:`mrfq.flows` -- scenarios, traffic, the one validation gate;
* :mod:`mrfq.fq` -- the packet schedulers, one module each on one contract;
* :mod:`mrfq.router` -- the event loop and its SimPy reference;
* :mod:`mrfq.analysis` -- fluid allocations, the Markov model, sweeps, the ``mrfq`` command.

The Python API (:mod:`mrfq.analysis.api`) is reachable from here, loaded on first use so that
``import mrfq`` costs nothing::

    >>> import mrfq
    >>> [round(r["phi"], 4) for r in mrfq.allocate([[0.5, 1.0], [1.0, 0.5]], "drf").to_records()]
    [0.6667, 0.6667]

In the source tree this file lives in ``analysis/_mrfq/`` (the repository's top-level folders are
the subpackages; ``pyproject.toml`` maps them into ``mrfq``).
"""

from __future__ import annotations

from importlib import import_module

#: the API's public names, re-exported lazily (``mrfq.run`` is ``mrfq.analysis.api.run``)
_API = (
    "MrfqError", "Records", "RunReport", "ScorecardReport", "allocate", "cluster_allocate", "cluster_presets",
    "cluster_simulate", "compare", "fluid", "load", "load_cluster", "presets", "run", "schedulers", "scorecard",
)

__all__ = ["api", *_API]


def __getattr__(name: str):
    if name == "api":
        return import_module("mrfq.analysis.api")
    if name == "MrfqError":
        return import_module("mrfq.flows.errors").MrfqError
    if name in _API:
        return getattr(import_module("mrfq.analysis.api"), name)
    raise AttributeError(f"module 'mrfq' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "analysis", "flows", "fq", "router"})
