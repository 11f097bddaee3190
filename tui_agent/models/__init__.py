"""Model adapters: litellm router strings, the embedded local model, config objects."""
