"""Bring-your-own-repro examples: `kerasbench run --repro <file>` (see kerasbench.repro)."""
