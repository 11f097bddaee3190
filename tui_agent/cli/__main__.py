"""``python -m tui_agent.cli`` is ``tui-agent``."""

import sys

from tui_agent.cli.main import main

sys.exit(main())
