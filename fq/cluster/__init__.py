"""Task-level cluster mechanisms: one module per mechanism, the common
contract in :mod:`fq.cluster.state`, the registry in :mod:`fq.cluster.registry`."""
