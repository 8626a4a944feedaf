"""Public TF/Keras memory reports as repro files: one a report, its claim in module metadata (kerasbench.public)."""
