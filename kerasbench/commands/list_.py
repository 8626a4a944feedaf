"""`kerasbench list`: the registries."""

import argparse
from typing import TextIO

NAME = "list"
HELP = "loop shapes, strategies (where they apply, which need a GPU), metrics"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """No options."""


def run(args: argparse.Namespace, out: TextIO) -> int:
    """The registries: loop shapes, strategies, profiles, allocators, metrics."""
    from ..allocators import ALLOCATORS, ENV_VAR as ALLOCATOR_VAR
    from ..loops import LOOPS
    from ..metrics import METRICS
    from ..profiles import ENV_VAR, PROFILES
    from ..strategies import STRATEGIES

    width = max(map(len, list(LOOPS) + list(STRATEGIES))) + 2
    out.write("Loop shapes\n")
    for shape in LOOPS.values():
        only = f" (Keras' tensorflow backend only: {shape.tf_only})" if shape.tf_only else ""
        out.write(f"  {shape.name:<{width}}{shape.description}{only}\n")
    out.write("\nStrategies\n")
    for s in STRATEGIES.values():
        applies = " ".join(name for name in LOOPS if name in s.applies_to)
        gpu = "; needs a GPU (--device gpu)" if s.needs_gpu else ""
        backend = f"; Keras' {s.backend} backend only (--backend)" if s.backend else ""
        out.write(f"  {s.name:<{width}}{s.description}\n  {'':<{width}}applies to: {applies}{gpu}{backend}\n")
    out.write("\nProfiles (--profile or $" + ENV_VAR + ")\n")
    for p in PROFILES.values():
        out.write(f"  {p.name:<{width}}{p.summary()}\n")
    out.write("\nAllocators (--allocator or $" + ALLOCATOR_VAR + ")\n")
    for a in ALLOCATORS.values():
        out.write(f"  {a.name:<{width}}{a.description}\n")
    out.write("\nMetrics\n")
    for m in METRICS.values():
        out.write(f"  {m.name:<{width}}{m.description} [{m.unit}]\n")
    return 0
