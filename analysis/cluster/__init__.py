"""Cluster-level fluid allocations and analysis (issue 11): DRFH, property checks,
virtual-cluster yield; the objective table in :mod:`analysis.cluster.objectives`."""
