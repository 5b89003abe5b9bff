"""Task-level cluster mechanisms (issue 11): one module per mechanism, the common
contract in :mod:`fq.cluster.state`, the registry in :mod:`fq.cluster.registry`."""
