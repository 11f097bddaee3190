"""What the app and the CLI share to start, below both: the command line (``args``), the
agent built from it and the settings (``agents``, ``configured``). Neither front end imports the
other; ``tui_agent.main`` starts one of them (the ``tui-agent`` command)."""
