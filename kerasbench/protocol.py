"""The verdict rule's version and its stamp: which rule judged a record (its summary's `protocol`), and the one check
that records set side by side were judged by one rule. The history of versions is docs/protocol.md's "Versions".
kerasbench.rule's, kept apart from that package: asv's registries read it and must not import numpy, which importing
any module under kerasbench/rule/ would (a package runs its __init__ first)."""

from __future__ import annotations

from typing import Dict, Iterable, Optional, Tuple

# The rule's version: every record's summary, calibration and atlas carries it, and asv benchmark versions include
# it (a dashboard keeps the series of before and after apart). Its history is written once, in docs/protocol.md
# ("Versions"); docs/layout.md lists what else a change of the rule touches.
PROTOCOL_VERSION = 9


def version_of(summary: Optional[dict]) -> Optional[int]:
    """The protocol a record's summary was judged by; None for a record from before the stamp (protocol 7 or
    older: records carried only kerasbench's version, 0.1.0 since the first commit)."""
    value = (summary or {}).get("protocol")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def version_text(version: Optional[int]) -> str:
    """'protocol 8', or 'protocol 7 or older (unstamped)' for a record without a stamp."""
    return f"protocol {version}" if version is not None else "protocol 7 or older (unstamped)"


def one_version(items: Iterable[Tuple[dict, str]]) -> Optional[int]:
    """The one protocol a set of (record, path) was judged by; a UsageError naming a path of each when they mix
    (their verdicts are not one rule's: `--rejudge` judges the older ones again from their series)."""
    from .errors import UsageError

    seen: Dict[Optional[int], str] = {}
    for record, path in items:
        if record.get("status", "ok") == "ok":  # a skipped or failed record holds no verdict to set beside another
            seen.setdefault(version_of(record.get("summary")), path)
    if len(seen) > 1:
        (a, pa), (b, pb) = sorted(seen.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0))[-2:]
        raise UsageError(f"Records of two verdict rules: {pb} was judged by {version_text(b)}, {pa} by "
                         f"{version_text(a)}; their verdicts are not one rule's. Measure again, or give --rejudge "
                         f"to judge every record again from its stored series by protocol {PROTOCOL_VERSION} "
                         "(docs/protocol.md, \"Versions\": what a re-judgement can and cannot change).")
    return next(iter(seen), None)
