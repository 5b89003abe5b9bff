"""Cluster-level fluid allocations and analysis: DRFH, property checks,
virtual-cluster yield; the objective table in :mod:`analysis.cluster.objectives`."""
