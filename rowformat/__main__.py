"""``python -m rowformat``: the ``rowformat`` command."""
import sys

from .cli import main

sys.exit(main())
