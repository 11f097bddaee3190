"""``python -m tui_agent`` is ``tui-agent``."""

import sys

from tui_agent.main import main

sys.exit(main())
