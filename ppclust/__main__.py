"""``python -m ppclust`` runs the command line (same as the ``ppclust`` script)."""

import sys

from ppclust.cli import main

sys.exit(main())
