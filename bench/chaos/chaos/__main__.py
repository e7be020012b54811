"""`python3 -m bench.chaos.chaos`: see bench/chaos/run.sh."""

import sys

from .soak import main

sys.exit(main())
