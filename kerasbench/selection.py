"""What a user names from the registries: 'a,b' or 'all', and the (loop shape, strategy) pairs so named.

The one place that turns `--loop`/`--strategy` (and kerasbench.measure's `loop=`/`strategies=`) into pairs, so the
command line, the Python API and the benchmarks select alike. Unknown names are the registries' one-line errors.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from . import _compat
from .errors import UsageError, unknown
from .loops import LOOPS, builtin_loops, get_loop
from .strategies import STRATEGIES, get_strategy, split, strategies_for


def names(text: str, registry: dict, kind: str) -> list:
    """'a,b' or 'all' -> names (checked by the caller against the registry), each once in the order first named: a
    name given twice ('a,a', `--strategy a --strategy a`, strategies=['a', 'a']) is one pair, not two pairs that
    compare would later refuse as duplicates."""
    if text == "all":
        return list(registry)
    if not isinstance(text, str):
        raise UsageError(f"Invalid value for argument `{kind}`. Received: {text!r}. "
                         "Expected a name, a comma list or 'all'.")
    named = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not named:
        raise UsageError(f"Invalid value for argument `{kind}`. Received: {text!r}. "
                         "Expected a name, a comma list or 'all'.")
    return named


def loops_named(text: str) -> List[str]:
    """The loop shapes of 'a,b' or 'all' (every registered one), each checked against the registry."""
    loops = names(text, LOOPS, "loop")
    for name in loops:
        get_loop(name)
    return loops


def pairs_for(loops_arg: str, strategies_arg: str, device: Optional[str] = None,
              backend: str = "") -> List[Tuple[str, str]]:
    """(loop, strategy) pairs named on the command line; 'all' means the applicable ones.

    With a `device` other than gpu, strategy 'all' leaves out the GPU-only strategies (unless nothing else is
    left), and the strategies of another Keras backend than `backend` ('': the caller's); strategies named one by
    one stay, and their pairs say why they skip.
    """
    loops = names(loops_arg, builtin_loops(), "loop")
    for name in loops:
        get_loop(name)
    if loops_arg == "all":
        loops = [name for name in loops if name != "control"]
    pairs = []
    if strategies_arg == "all":
        for loop in loops:
            pairs += [(loop, s) for s in strategies_for(loop)]
    else:
        named = names(strategies_arg, STRATEGIES, "strategy")
        for s in named:
            base, steps = split(s)  # a name composed with cleanup steps (as ablate names them) is its base's
            if base not in STRATEGIES and len(loops) == 1:  # the loop's own strategies, and the nearest names
                raise unknown(f"strategy for loop {loops[0]}", base if steps else s, strategies_for(loops[0]))
            if not get_strategy(s).applies_to & set(loops):  # a user's mistake, not a pair to skip (a GPU one skips)
                shown = ", ".join(strategies_for(loops[0])) if len(loops) == 1 else "see `kerasbench list`"
                raise UsageError(f"Strategy {s} does not apply to loop{'s' * (len(loops) > 1)} {', '.join(loops)}. "
                                 f"Expected one of: {shown}.")
        # several loops: each named strategy where it applies
        pairs = [(loop, s) for loop in loops for s in named if loop in get_strategy(s).applies_to]
    if device is not None and strategies_arg == "all" and device != "gpu":
        pairs = [(loop, s) for loop, s in pairs if not get_strategy(s).needs_gpu] or pairs
    if strategies_arg == "all":
        chosen = backend or _compat.backend()
        pairs = [(loop, s) for loop, s in pairs if get_strategy(s).backend in ("", chosen)] or pairs
    return pairs


def gates(text: str, valid: Sequence[str]) -> Tuple[str, ...]:
    """The verdicts of `--fail-on grows,inconclusive` (run's and compare's), each once; UsageError naming the valid
    ones otherwise."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    for name in names or ("",):
        if name not in valid:
            raise unknown("fail-on", name, valid)
    return names
