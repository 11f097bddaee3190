"""The app's widgets: one a module, each with its DEFAULT_CSS and messages."""
