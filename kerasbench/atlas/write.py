"""The one writer of the atlas (`kerasbench atlas`, `report --atlas`, publish): the page and its data, each
atomically, never through a link onto an input.
"""

from __future__ import annotations

import os
from typing import List, Optional, Sequence

from ..compare.cells import Groups
from ..errors import UsageError
from .data import DATA, PAGE, data, data_text
from .inputs import load
from .html import page


def write(paths: Sequence[str], folder: str, groups: Optional[Groups] = None, rejudge: bool = False,
          page_name: str = PAGE, with_data: bool = True, trust: Sequence[str] = ()) -> List[str]:
    """The one writer of the atlas (`kerasbench atlas`, `report --atlas`, publish): the atlas of `paths` (records, or
    one atlas data file and records to add to it; `groups`: already loaded from them, else loaded here with
    `rejudge`) into `folder`, made if missing: the page (PAGE, or `page_name`: `report --atlas --output FILE`) and,
    `with_data`, DATA, each atomically.
    The inputs' errors come first, then the outputs' (a folder that is a file; an output that is an input; a folder
    made for outputs then refused is removed again); DATA is not written again when it is the only input (the page is
    made again from it), and written in place, atomically, when records beside it add cells. `trust`: the lines
    trust_lines made of long runs (docs/reference/), said under the map. Returns the paths written, the page last."""
    from .. import answers, files, calibration_store

    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise UsageError(f"Cannot write the atlas to {folder}: it is not a folder; give a folder (made if missing).")
    groups = load(paths, rejudge) if groups is None else groups  # the inputs' errors: nothing made for them
    outputs = {"the atlas page": os.path.join(folder, page_name)}
    own = own_data(paths, folder)
    if with_data and not (own and len(paths) == 1):
        outputs["the atlas data"] = os.path.join(folder, DATA)
    made = not os.path.isdir(folder)
    files.make_folder(folder, "the atlas")  # check_outputs checks files in existing folders
    try:  # FOLDER/atlas.json with records beside it: written again, their cells added (its own input, atomically)
        files.check_outputs(outputs, {"PATH": [p for p in paths if p != own]}, calibration_store.folders())
    except UsageError:
        if made:  # refused: no empty folder left behind (inside an input records folder, say)
            os.rmdir(folder)
        raise
    answered = answers.read(os.path.join(folder, answers.FILE))["answers"]  # the changes' answers, when run
    text = page(paths, groups, answered, trust)
    payload = data_text(data(groups)) if "the atlas data" in outputs else None
    written = []
    if payload is not None:
        written.append(files.write_text(outputs["the atlas data"], payload, "the atlas data"))
    written.append(files.write_text(outputs["the atlas page"], text, "the atlas"))
    return written


def own_data(paths: Sequence[str], folder: str) -> Optional[str]:
    """The one of `paths` that is `folder`'s own DATA (the atlas made again, or added to, where it is), else None."""
    own = os.path.join(folder, DATA)
    if os.path.islink(own) or not os.path.isfile(own):  # a link there is another file: never written through
        return None
    return next((p for p in paths if os.path.isfile(p) and os.path.samefile(p, own)), None)
