"""``python -m prompt_host``: the ``prompt-host`` command line (see `prompt_host._cli`)."""

import sys

from ._cli import main

sys.exit(main())
