"""``python -m mrfq``: the ``mrfq`` command."""

import sys

from mrfq.analysis.cli import main

sys.exit(main())
