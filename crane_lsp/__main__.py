"""``python -m crane_lsp``: the same entry point as the ``crane-lsp`` script."""

import sys

from crane_lsp.cli import main

sys.exit(main())
