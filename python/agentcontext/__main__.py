"""``python -m agentcontext``: the command line."""

import sys

from agentcontext.cli import main

sys.exit(main())
