"""A column of the atlas (and a side of compare): a release and the axis it was measured on, as one value.

Its text form is the published one (`2.16.2+tf_keras`, `2.21.0+py3.12`, `2.21.0+jax`, `2.22.0-dev20260514`):
`Column.parse` reads it and `str()` writes it; what a label means (a Python, another Keras 3 backend, tf_keras) is
asked of the value, not of the string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PYTHON = re.compile(r"py(\d+\.\d+)")
_NIGHTLY = re.compile(r"[\d.]+-?dev(\d{4})(\d{2})(\d{2})")


@dataclass(frozen=True)
class Column:
    """`release` (2.16.2, a nightly's 2.22.0-dev20260514) and `label`: '' for the release's own environment,
    'tf_keras', 'pyX.Y', a backend (jax, torch) or another axis's."""

    release: str
    label: str = ""

    @classmethod
    def parse(cls, text: str) -> "Column":
        """'2.16.2+tf_keras' -> Column('2.16.2', 'tf_keras'); '2.21.0' -> Column('2.21.0')."""
        release, _, label = str(text).partition("+")
        return cls(release, label)

    @classmethod
    def on_python(cls, release: str, python: str) -> "Column":
        """The column of `release` measured on Python `python` ('3.12'): `<release>+py3.12`."""
        return cls(release, f"py{python}")

    def __str__(self) -> str:
        return f"{self.release}+{self.label}" if self.label else self.release

    @property
    def python(self) -> str:
        """'3.12' for a Python axis's column (`+py3.12`), else ''."""
        found = _PYTHON.fullmatch(self.label)
        return found.group(1) if found else ""

    @property
    def backend(self) -> str:
        """'jax' or 'torch' for another Keras 3 backend's column, else ''."""
        from ._compat import FRAMEWORKS  # the other backends' packages, by backend (record.OTHER_BACKENDS)

        return self.label if self.label in FRAMEWORKS else ""

    @property
    def cli_release(self) -> str:
        """The release as the commands take it: a nightly's label (2.22.0-dev20260514) is nightly:2026-05-14."""
        found = _NIGHTLY.fullmatch(self.release)
        return f"nightly:{found.group(1)}-{found.group(2)}-{found.group(3)}" if found else self.release

    @property
    def nightly(self) -> bool:
        return self.cli_release.startswith("nightly:")
