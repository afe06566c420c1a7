"""``python -m deadletter.cli``: the ``deadletter`` console script."""

import sys

from . import main

if __name__ == "__main__":  # (imported, as stubtest does, it runs nothing)
    sys.exit(main())
