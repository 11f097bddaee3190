"""The ``tui-agent`` command line: ``chat``, ``send`` and ``watch`` on shared threads."""
