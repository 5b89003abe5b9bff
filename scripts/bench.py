#!/usr/bin/env python3
"""Speed benchmark: mrfq's numba engine vs the plain-C yardstick (same as `mrfq bench`).

    python scripts/bench.py            # full: 2e7 services per run, 5 repetitions
    python scripts/bench.py --quick    # a minute or so
    python scripts/bench.py --json     # one JSON object {rows: [...]}
"""

import sys

from mrfq.router.bench import main

if __name__ == "__main__":
    sys.exit(main())
