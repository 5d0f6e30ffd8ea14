"""``python -m rowformat.cli``: the ``rowformat`` command (as ``python -m rowformat``)."""
import sys

from . import main

sys.exit(main())
