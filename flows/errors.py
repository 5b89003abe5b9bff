"""The one error type every user-facing check raises.

The CLI turns a :class:`MrfqError` into one line on stderr and exit code 2,
never a traceback.  The message always names the offending field and what is
allowed, e.g. ``flow[1].cost[0] = -1.0: must be >= 0``.
"""


class MrfqError(ValueError):
    """Bad input: a malformed scenario, an impossible parameter, an unknown name."""


class ScenarioError(MrfqError):
    """A scenario (TOML file, preset or keyword arguments) failed validation."""
