"""``python -m cyrank`` = the ``cyrank`` command."""
import sys

from .cli import main

sys.exit(main())
