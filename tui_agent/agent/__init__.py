"""The agent layer: ``Agent``, its runs, its thread runtime, routing and subscriptions.

Importing the package loads nothing (``import tui_agent`` stays light, tests/test_import.py);
``tui_agent.Agent`` is the public way in.
"""
