"""``python -m ppclust`` runs the command line (same as the ``ppclust`` script)."""

import sys

from ppclust.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
