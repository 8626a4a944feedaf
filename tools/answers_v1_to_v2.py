"""Convert an atlas answers file of version 1 (each answer kept as the command line and its printed text) to version 2
(each a question's fields and the command's answer as data), once: `python tools/answers_v1_to_v2.py FILE`.

Version 1 kept what a command printed; the atlas read its meaning back with prefixes and regexes at every build.
This reads them one last time, here, outside the package: the question from the command line (every name checked
against the registries: one that is not a question this kerasbench can ask is left out, and counted), and from the
answer's words what the atlas needs of them (the ends alike, the ends' verdict, the first bad version, every backend
alike). An entry that gave no answer becomes a failure, asked again by the next `atlas --answer`.
"""

from __future__ import annotations

import re
import shlex
import sys

from kerasbench import answers
from kerasbench.attribute import BACKENDS_ALIKE
from kerasbench.files import read_json, write_json
from kerasbench.triage import ENDS_ALIKE

OPTIONS = {"--good": "good", "--bad": "bad", "--tf": "tf", "--loop": "loop", "--strategy": "strategy",
           "--python": "python", "--keras": "keras", "--backend": "backend", "--profile": "profile"}


def question(command: str, what: str) -> answers.Question | None:
    words = shlex.split(command)
    if words[:1] != ["kerasbench"] or len(words) < 2 or len(words[2:]) % 2:
        return None
    fields: dict = {"verb": words[1], "what": what}
    for option, value in zip(words[2::2], words[3::2]):
        if option == "--repro":
            folder, _, name = value.rpartition("/")
            if value == answers.REPRO_PLACEHOLDER:
                fields["placeholder"] = True
            elif folder == answers.REPORTS_FOLDER and name.endswith(".py"):
                fields["report"] = name[:-3]
            else:
                return None
        elif option == "--backends":
            fields["backends"] = tuple(value.split(","))
        elif option in OPTIONS:
            fields[OPTIONS[option]] = value
        else:
            return None
    q = answers.Question(**fields)
    return q if q.problem() is None and q.command == command else None


def found(said: str) -> dict:
    ends = re.search(r"The ends: .+? against .+?, (\w+):", said)
    first = re.search(r"Answer: TF (\S+?) is the first (?:nightly|release|version) ", said)
    return {"alike": said.startswith("No answer for ") and f"): {ENDS_ALIKE} (" in said,
            "ends": ends.group(1) if ends else None, "first_bad": first.group(1) if first else None,
            "backends_alike": said.removeprefix("Answer: ").startswith(BACKENDS_ALIKE)}


def main(path: str) -> int:
    data = read_json(path, "answers file", limit=answers.LIMIT)
    if data.get("schema") == answers.SCHEMA and data.get("version") == answers.VERSION:
        print(f"{path}: version {answers.VERSION} already: nothing to convert")
        return 0
    if data.get("schema") != answers.SCHEMA or data.get("version") != 1:
        print(f"{path}: not an answers file of version 1", file=sys.stderr)
        return 2
    out, dropped = {}, 0
    for command, entry in data["answers"].items():
        q = question(command, str(entry.get("what") or ""))
        if q is None:
            dropped += 1
            continue
        new = {"question": q.data(), "what": q.what, "rc": entry.get("rc"), "seconds": entry.get("seconds", 0),
               "finished": entry.get("finished", ""), "changes": list(entry.get("changes") or [])}
        said = str(entry.get("answer") or "")
        if said and entry.get("rc") == 0:
            new["result"] = {**answers.result(said, **found(said)), "protocol": None}  # made before the stamp
        else:
            new["tail"] = list(entry.get("tail") or [])
        out[command] = new
    data.update(version=answers.VERSION, answers=out)
    write_json(path, data, "answers")
    print(f"{path}: {len(out)} answers converted to version {answers.VERSION}, {dropped} left out (not a question "
          "this kerasbench can ask)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
