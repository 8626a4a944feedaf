"""A small local stand-in for GitHub Actions, enough to run kerasbench's workflow jobs here: each step's shell as
the runner runs it (`bash -e -o pipefail`, the workflow's, job's and step's `env`, GITHUB_ENV, GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY), `if:` and `${{ }}` evaluated in the part of GitHub's expression language the workflows use,
and the actions they use emulated on folders: upload-artifact (its least-common-ancestor layout, dot paths
skipped without include-hidden-files, if-no-files-found), download-artifact (a folder per artifact, or merged),
configure-pages and upload-pages-artifact; checkout, setup-python, cache and deploy-pages do nothing here.

What it cannot show: GitHub's own behaviour (runners, permissions, the artifact service). What it does show: that
what one job writes is what the next one reads, step by step, with the commands the workflow really runs.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

_TOKEN = re.compile(r"\s+|'(?:[^']|'')*'|&&|\|\||!=|==|!|\(|\)|,|\d+|[A-Za-z_][\w-]*(?:\.(?:\*|[\w-]+))*")


def _contains(haystack, needle):
    if isinstance(haystack, list):
        return any(str(item).lower() == str(needle).lower() for item in haystack)
    return str(needle).lower() in str(haystack or "").lower()


def _format(text, *args):
    return re.sub(r"\{(\d+)\}", lambda m: show(args[int(m.group(1))]), text)


def show(value) -> str:
    """A value as GitHub writes it into a string."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _lookup(context, path):
    """A property path of GitHub's contexts (`github.event.pull_request.labels.*.name`, `x.include[0]`); null when
    missing."""
    values, star = [context], False
    for part in re.findall(r"\*|[\w-]+|\[\d+\]", path):
        if part == "*":
            values, star = [v for value in values for v in (value or [])], True
        elif part.startswith("["):
            i = int(part[1:-1])
            values = [value[i] if isinstance(value, list) and i < len(value) else None for value in values]
        else:
            values = [value.get(part) if isinstance(value, dict) else None for value in values]
    return values if star else values[0]


def evaluate(expression, context, functions: Optional[dict] = None):
    """GitHub's expression language, the part the workflows use (literals, properties, ==, !=, !, &&, ||,
    parentheses, contains, format, fromJSON, and the status and hashFiles functions `functions` gives), evaluated
    in Python (&& and || return an operand, as GitHub's do)."""
    functions = {"contains": _contains, "format": _format, "fromJSON": json.loads, "_prop": _lookup,
                 **(functions or {})}
    expression = expression.strip()
    if expression.startswith("${{") and expression.endswith("}}"):
        expression = expression[3:-2]
    # fromJSON(x).include[0]: a property of a call's value
    expression = re.sub(r"fromJSON\(([^()]*)\)\.([\w.\[\]-]+)", r"_prop(fromJSON(\1), '\2')", expression)
    out, pos = [], 0
    while pos < len(expression):
        token = _TOKEN.match(expression, pos)
        assert token, f"not understood here: {expression[pos:]!r}"
        t, pos = token.group(0), token.end()
        if t.isspace():
            continue
        if t.startswith("'"):
            out.append(repr(t[1:-1].replace("''", "'")))
        elif t in ("&&", "||", "!"):
            out.append({"&&": " and ", "||": " or ", "!": " not "}[t])
        elif t in ("==", "!=", "(", ")", ",") or t.isdigit():
            out.append(t)
        elif t in ("true", "false", "null"):
            out.append({"true": "True", "false": "False", "null": "None"}[t])
        elif t in functions:
            out.append(f"_functions[{t!r}]")
        else:
            out.append(f"_lookup(_context, {t!r})")
    return eval("".join(out), {"_functions": functions, "_lookup": _lookup, "_context": context})


def interpolate(text, context, functions: Optional[dict] = None):
    """A string with ${{ }} expressions, as GitHub fills it in."""
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: show(evaluate(m.group(1), context, functions)), str(text))


def uses(step, action) -> bool:
    """Whether a step uses `action` (any version)."""
    return str(step.get("uses", "")).split("@")[0] == action


def hidden(path: str) -> bool:
    """True when a component of `path` starts with a dot (upload-artifact >= 4.4 skips those by default)."""
    from pathlib import PurePosixPath

    return any(part.startswith(".") and part not in (".", "..") for part in PurePosixPath(path.lstrip("!")).parts)


class Job:
    """One job of a workflow run here: `run()` its steps in `cwd`; what it wrote to the summary, its outputs,
    the artifacts it uploaded (into `artifacts`, a folder per artifact name) and whether it succeeded."""

    def __init__(self, workflow: dict, job_id: str, cwd: Path, artifacts: Path, context: dict,
                 env: Optional[Dict[str, str]] = None, path: Optional[List[str]] = None):
        self.workflow, self.job_id, self.job = workflow, job_id, workflow["jobs"][job_id]
        self.cwd, self.artifacts = Path(cwd), Path(artifacts)
        self.context = json.loads(json.dumps(context))
        self.context.setdefault("steps", {})
        self.context.setdefault("runner", {"os": "Linux"})
        self.extra_env, self.path = dict(env or {}), list(path or [])
        self.files = self.cwd.parent / f".gha-{job_id}-{os.getpid()}"
        self.log: List[str] = []
        self.failed = False

    def _functions(self):
        return {"always": lambda: True, "cancelled": lambda: False, "success": lambda: not self.failed,
                "failure": lambda: self.failed, "hashFiles": self._hash_files}

    def _hash_files(self, *patterns):
        found = sorted({f for p in patterns for f in glob.glob(str(self.cwd / p), recursive=True) if os.path.isfile(f)})
        if not found:
            return ""
        digest = hashlib.sha256()
        for f in found:
            digest.update(hashlib.sha256(Path(f).read_bytes()).digest())
        return digest.hexdigest()

    def _value(self, text):
        return interpolate(text, self.context, self._functions())

    def _env(self, step) -> Dict[str, str]:
        env = dict(os.environ)
        for name in list(env):
            if name.startswith(("GITHUB_", "KERASBENCH_")):
                del env[name]
        env.update(self.extra_env)
        github = self.context["github"]
        env.update(GITHUB_EVENT_NAME=github["event_name"], GITHUB_SHA=github.get("sha", ""),
                   GITHUB_REPOSITORY=github.get("repository", "owner/kerasbench"), GITHUB_WORKFLOW="benchmarks",
                   GITHUB_RUN_ID=str(github.get("run_id", 1)), GITHUB_ENV=str(self.files / "env"),
                   GITHUB_OUTPUT=str(self.files / "output"), GITHUB_STEP_SUMMARY=str(self.files / "summary"))
        for scope in (self.workflow.get("env") or {}, self.job.get("env") or {}):
            for name, value in scope.items():
                self.context.setdefault("env", {})[name] = env[name] = self._value(value)
        env.update(self._github_env())
        for name, value in (step.get("env") or {}).items():
            env[name] = self._value(value)
        if self.path:
            env["PATH"] = os.pathsep.join(self.path + [env["PATH"]])
        return env

    def _github_env(self) -> Dict[str, str]:
        path = self.files / "env"
        lines = path.read_text().splitlines() if path.exists() else []
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def run(self) -> "Job":
        if self.files.exists():
            shutil.rmtree(self.files)
        self.files.mkdir(parents=True)
        for name in ("env", "output", "summary"):
            (self.files / name).write_text("")
        for step in self.job["steps"]:
            condition = step.get("if")
            if condition is None and self.failed:
                continue  # success() is the implicit condition
            if condition is not None and not evaluate(str(condition), self.context, self._functions()):
                self.log.append(f"skipped: {step.get('name') or step.get('uses') or step.get('run', '')[:40]}")
                continue
            ok = self._action(step) if "uses" in step else self._shell(step)
            if not ok:
                self.failed = True
        return self

    def _shell(self, step) -> bool:
        script = self._value(step["run"])
        done = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script],
                              cwd=self.cwd, env=self._env(step), capture_output=True, text=True)
        self.log.append(f"$ {step.get('name') or script.splitlines()[0]}\n{done.stdout}{done.stderr}"
                        f"[exit {done.returncode}]")
        if step.get("id"):
            out = self.files / "output"
            lines = out.read_text().splitlines()
            self.context["steps"][step["id"]] = {"outputs": dict(line.split("=", 1) for line in lines if "=" in line)}
        return done.returncode == 0

    def _action(self, step) -> bool:
        given = {name: self._value(value) for name, value in (step.get("with") or {}).items()}
        if uses(step, "actions/upload-artifact") or uses(step, "actions/upload-pages-artifact"):
            name = given.get("name") or "github-pages"
            return self._upload(name, given)
        if uses(step, "actions/download-artifact"):
            return self._download(given)
        if uses(step, "actions/configure-pages"):
            self.context["steps"][step.get("id", "pages")] = {"outputs": {"base_url": "https://owner.github.io/kb"}}
            return True
        if step.get("id"):
            self.context["steps"][step["id"]] = {"outputs": {"page_url": "https://owner.github.io/kb/"}}
        return True  # checkout (cwd is a clone), setup-python, cache, deploy-pages

    def _upload(self, name: str, given: dict) -> bool:
        lines = [line.strip() for line in given.get("path", "").splitlines()]
        paths = [p for p in lines if p and not p.startswith("#")]
        hidden_ok = str(given.get("include-hidden-files", "false")).lower() == "true"
        files = []
        for pattern in paths:
            for found in glob.glob(str(self.cwd / pattern)):
                base = Path(found)
                for f in ([base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]):
                    relative = str(f.relative_to(self.cwd))
                    if hidden_ok or not hidden(relative):
                        files.append(f)
        if not files:
            self.log.append(f"upload {name}: no files found at {paths}")
            return given.get("if-no-files-found", "warn") != "error"
        roots = [self.cwd / p for p in paths if (self.cwd / p).exists()]
        common = Path(os.path.commonpath([str(r if r.is_dir() else r.parent) for r in roots]))
        if len(roots) == 1 and roots[0].is_dir():
            common = roots[0]
        target = self.artifacts / name
        assert not target.exists(), f"two uploads named {name}"
        for f in files:
            dest = target / f.relative_to(common)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
        self.log.append(f"upload {name}: {len(files)} file(s)")
        return True

    def _download(self, given: dict) -> bool:
        pattern, path = given.get("pattern") or given.get("name"), self.cwd / given.get("path", ".")
        merge = str(given.get("merge-multiple", "false")).lower() == "true"
        names = sorted(p.name for p in self.artifacts.iterdir() if glob.fnmatch.fnmatch(p.name, pattern)) \
            if self.artifacts.exists() else []
        for name in names:
            shutil.copytree(self.artifacts / name, path if merge else path / name, dirs_exist_ok=True)
        self.log.append(f"download {pattern}: {names}")
        return True

    @property
    def summary(self) -> str:
        path = self.files / "summary"
        return path.read_text() if path.exists() else ""

    @property
    def outputs(self) -> Dict[str, str]:
        found = {}
        for name, value in (self.job.get("outputs") or {}).items():
            found[name] = self._value(value)
        return found

    def transcript(self) -> str:
        return "\n".join(self.log)
