"""Publish the asv dashboard so that it also works offline.

asv's index.html loads jQuery, flot, bootstrap and friends from public CDNs; on a machine without
internet (a CI box, a cluster node) the page then shows no graph at all. `kerasbench publish`
runs `asv publish` and then replaces each CDN link with a local copy taken from the npm registry
package of the same version (fetched once with `npm pack`, cached in ~/.cache/kerasbench/npm).
asv publish empties the html folder, so the kerasbench report (report.py) is written again after it
from the records tree beside the config.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zlib
from typing import Optional, TextIO

from .asvconf import asv_module, html_dir_of, read_config
from .errors import UsageError
from .files import DATA_LIMIT, WriteError, check_readable, inside, make_folder, read_text, write_text

# CDN address in asv 0.6's index.html -> (npm package@version, file inside the package).
ASSETS = {
    "https://code.jquery.com/jquery-3.3.1.min.js": ("jquery@3.3.1", "dist/jquery.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js": ("flot@0.8.3", "jquery.flot.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js": ("flot@0.8.3", "jquery.flot.time.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js":
        ("flot@0.8.3", "jquery.flot.selection.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js":
        ("flot@0.8.3", "jquery.flot.categories.js"),
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js":
        ("flot-orderbars@1.0.0", "js/jquery.flot.orderBars.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js":
        ("stupid-table-plugin@1.1.3", "stupidtable.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js": ("blueimp-md5@2.19.0", "js/md5.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js":
        ("bootstrap@3.1.1", "dist/js/bootstrap.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css":
        ("bootstrap@3.1.1", "dist/css/bootstrap.min.css"),
}
# Files a local asset refers to in turn (bootstrap's css loads its icon fonts from ../fonts/).
EXTRA = {"bootstrap@3.1.1": "dist/fonts/"}


def cache_dir() -> str:
    """Where the npm packages of the offline dashboard are kept ($KERASBENCH_CACHE, else ~/.cache/kerasbench/npm)."""
    return os.environ.get("KERASBENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kerasbench", "npm")


def _tarball(spec, cache):
    """The npm tarball of `spec` (name@version), packed once into `cache`, whole: a cached one that does not read to
    its end (a download cut short, a full disk) is fetched again, or named, to delete, when it cannot be."""
    name, version = spec.rsplit("@", 1)
    path = os.path.join(cache, f"{name}-{version}.tgz")
    if os.path.lexists(path):
        damage = damaged(check_readable(path, "npm package"))  # a FIFO in the cache would hang tarfile
        if damage is None:
            return path
        if shutil.which("npm") is None:
            raise UsageError(f"The cached npm package {path} is damaged ({damage}): delete it and publish again "
                             "with npm installed (it is fetched again), or publish with --cdn.")
        os.unlink(path)  # fetched again below
    if shutil.which("npm") is None:
        raise UsageError(f"npm is needed once to fetch {spec} for the offline dashboard; "
                         "install Node.js (npm), or publish with --cdn to keep asv's CDN links.")
    os.makedirs(cache, exist_ok=True)
    command = ["npm", "pack", spec, "--pack-destination", cache, "--silent"]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(path):
        said = (proc.stderr or proc.stdout).strip().splitlines()
        raise UsageError(f"npm pack failed (exit {proc.returncode}): {said[-1].strip() if said else 'no output'} "
                         f"(command: {shlex.join(command)})")
    damage = damaged(path)
    if damage is not None:
        raise UsageError(f"npm pack {spec} wrote a damaged package {path} ({damage}): delete it and publish again, "
                         "or publish with --cdn.")
    return path


def damaged(path: str) -> Optional[str]:
    """Why the tarball at `path` cannot be read to its end (a truncated download: gzip's end marker, a member cut
    short), or None when every member reads whole. The packages are small (bootstrap's, the largest, 2.3 MB)."""
    try:
        with tarfile.open(path) as tar:
            for member in tar:
                if member.isfile():
                    with tar.extractfile(member) as f:
                        while f.read(1 << 20):
                            pass
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        return (str(e) or type(e).__name__).rstrip(".")
    return None


def _all_cached(cache=None):
    """Whether every npm package the pages need was already packed into the cache."""
    cache = cache or cache_dir()
    specs = {spec for spec, _ in ASSETS.values()}
    return all(os.path.exists(os.path.join(cache, "{}-{}.tgz".format(*spec.rsplit("@", 1)))) for spec in specs)


def member_target(tarball: str, member: tarfile.TarInfo, inner: str, folder: str) -> Optional[str]:
    """Where a wanted tar member is copied: a path inside `folder`; None for a folder entry; UsageError otherwise.

    A member that is a link, a device or a FIFO, or whose name is absolute or climbs out with '..',
    would write outside the dashboard (or somewhere a link points): the tarball is refused, not extracted.
    """
    if member.isdir():
        return None
    bad = None
    if not member.isfile():
        bad = "is a link or special file, not a regular file"
    elif os.path.isabs(inner) or inner.startswith("\\") or ".." in inner.replace("\\", "/").split("/"):
        bad = "has a path that leaves its folder"
    else:
        target = os.path.join(folder, inner)
        root = os.path.realpath(folder)
        if os.path.commonpath([root, os.path.realpath(target)]) != root:
            bad = "would be written outside the dashboard's vendor folder (through a link)"
    if bad:
        raise UsageError(f"Refusing the npm package {tarball}: its member {member.name!r} {bad}; "
                         "delete the file and publish again (or publish with --cdn).")
    return target


def localize(html_dir: str, cache: Optional[str] = None) -> int:
    """Copy every CDN asset of asv's pages into html_dir/vendor/, point the pages at them; returns the links changed."""
    cache = cache or cache_dir()
    vendor = os.path.join(html_dir, "vendor")
    for spec in sorted({spec for spec, _ in ASSETS.values()}):
        wanted = [member for s, member in ASSETS.values() if s == spec]
        tarball = _tarball(spec, cache)  # checked: a regular file that reads whole
        with tarfile.open(tarball) as tar:
            for member in tar.getmembers():
                inner = member.name.split("/", 1)[1] if "/" in member.name else member.name
                if inner in wanted or (spec in EXTRA and inner.startswith(EXTRA[spec])):
                    target = member_target(tarball, member, inner, os.path.join(vendor, spec.rsplit("@", 1)[0]))
                    if target is None:
                        continue  # a folder entry
                    make_folder(os.path.dirname(target), "the dashboard's offline copies")
                    with tar.extractfile(member) as src:  # a few hundred KiB; written as every file is
                        write_text(target, src.read(), "the dashboard's offline copy")
    replaced = 0
    for page in os.listdir(html_dir):
        if not page.endswith(".html"):
            continue
        path = os.path.join(html_dir, page)
        text = read_text(path, "dashboard page", DATA_LIMIT)
        for url, (spec, inner) in ASSETS.items():
            local = f"vendor/{spec.rsplit('@', 1)[0]}/{inner}"
            text, n = re.subn(re.escape(url), local, text)
            replaced += n
        # The CDN tags carry subresource-integrity hashes of the CDN's (minified) files; the local
        # copies are the npm package's own files, so their hashes differ: drop the attribute.
        text = re.sub(r'((?:src|href)="vendor/[^"]*")\s+integrity="[^"]*"', r"\1", text)
        write_text(path, text, "the dashboard")
    return replaced


_ASV_ERROR = re.compile(r"^(?:\[[^\]]*\])?[\s·]*(Error\b.*)$", re.MULTILINE)
_ASV_FILE = re.compile(r"file '([^']+)'")


def asv_errors(output: str) -> Optional[str]:
    """One line naming what asv publish logged as an error (it still exits 0), or None if it logged none."""
    errors = list(dict.fromkeys(m[1].strip() for m in _ASV_ERROR.finditer(output)))
    if not errors:
        return None
    files = list(dict.fromkeys(f for e in errors for f in _ASV_FILE.findall(e)))
    if files:
        first = next(e for e in errors if files[0] in e)
        more = f" (and {len(files) - 1} more file(s))" if len(files) > 1 else ""
        return (f"asv publish could not read the results file {files[0]}{more}: {first.split(': ', 1)[-1]}; "
                "fix or delete it (or run `asv run` again), then publish again.")
    return f"asv publish reported an error: {errors[0]}"


# What asv publish (0.6) and kerasbench write into html_dir: asv's page templates (its www folder, listed when asv is
# importable), the data asv writes beside them, the offline copies (vendor/), the report and the atlas (and the atlas
# page `report --atlas` wrote there before it wrote the atlas' folder).
ASV_OUTPUTS = {"index.json", "info.json", "regressions.json", "regressions.xml", "graphs", ".nojekyll", "vendor",
               "kerasbench-report.html", "kerasbench-atlas.html", "atlas", "asv.css", "asv.js", "asv_ui.js",
               "error.html", "graphdisplay.js",
               "index.html", "jquery.flot.axislabels.js", "regressions.css", "regressions.js", "summarygrid.js",
               "summarylist.css", "summarylist.js", "swallow.ico", "swallow.png"}


def _asv_outputs() -> set:
    try:
        import asv

        return ASV_OUTPUTS | set(os.listdir(os.path.join(os.path.dirname(asv.__file__), "www")))
    except (ImportError, OSError):
        return ASV_OUTPUTS


def check_html_dir(config: str) -> str:
    """The html_dir of `config` if asv publish may empty it (it deletes the folder first); a one-line UsageError
    saying what it would delete otherwise: the project's folder, the config, results_dir, env_dir, the records
    tree or the repository (html_dir is one of them or holds one), a git repository, or files asv did not write."""
    conf = read_config(config)
    base = os.path.dirname(os.path.abspath(config))
    given = conf.get("html_dir", "html")
    html = os.path.normpath(html_dir_of(config))
    refuse = f"Refusing to publish: html_dir {given!r} of {config} is {html}, which asv publish deletes first, and it"
    fix = "set html_dir to a folder of its own (e.g. \".asv/html\")"
    from .tree import records_root

    guarded = [("the project's folder (the config's)", base), ("the asv config", os.path.abspath(config))]
    guarded += [(f"{key} {str(conf.get(key, default))!r}", os.path.join(base, str(conf.get(key, default))))
                for key, default in (("results_dir", "results"), ("env_dir", "env"))]
    guarded.append(("the records tree", records_root(base)))
    repo = conf.get("repo")
    if isinstance(repo, str) and "://" not in repo and not repo.startswith("git@"):
        guarded.append((f"repo {repo!r}", os.path.join(base, repo)))
    for what, path in guarded:
        if inside(path, html):
            relation = "is" if os.path.realpath(path) == os.path.realpath(html) else "holds"
            raise UsageError(f"{refuse} {relation} {what} ({path}); {fix}.")
    if os.path.lexists(html) and not os.path.isdir(html):
        raise UsageError(f"{refuse} is not a folder; {fix}.")
    if os.path.isdir(html):
        if os.path.lexists(os.path.join(html, ".git")):
            raise UsageError(f"{refuse} holds a git repository (.git); {fix}.")
        other = sorted(set(os.listdir(html)) - _asv_outputs())
        if other:
            more = f" and {len(other) - 3} more" if len(other) > 3 else ""
            raise UsageError(f"{refuse} holds files asv did not write ({', '.join(other[:3])}{more}); move them, or "
                             f"{fix}.")
    return html


def publish_dashboard(config: str = "asv.conf.json", cdn: bool = False, out: TextIO = sys.stdout) -> str:
    """`asv publish`, then make the pages self-contained unless `cdn`; returns the html folder.

    html_dir is checked first (check_html_dir): asv publish deletes it, whatever it holds."""
    html = check_html_dir(config)
    asv_module()  # not installed: one line naming the extra, not `python -m asv`'s own error
    command = [sys.executable, "-m", "asv", "publish", "--config", config]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().splitlines()  # its last line: the error, a traceback's last
        raise UsageError(f"asv publish failed (exit {proc.returncode}): {said[-1].strip() if said else 'no output'} "
                         f"(command: {shlex.join(command)})")
    problem = asv_errors(proc.stdout + "\n" + proc.stderr)
    if problem:  # asv publish exits 0 after skipping a results file it cannot read: the dashboard would miss it
        raise UsageError(problem)
    if not cdn and shutil.which("npm") is None and not _all_cached():
        # a fresh machine without Node.js still gets its dashboard, just not an offline one
        out.write("npm not found: the dashboard keeps asv's CDN links (a browser needs the network to draw it); "
                  "install Node.js (npm) and publish again for an offline copy\n")
        cdn = True
    if not cdn:
        n = localize(html)
        out.write(f"published {html} with {n} local asset links (served by `asv preview`, it needs no network)\n")
    else:
        out.write(f"published {html} (assets from public CDNs)\n")
    from .tree import records_root

    write_beside_dashboard(records_root(os.path.dirname(os.path.abspath(config))), html, out)
    linked = link_pages(html)
    if linked:
        out.write(f"the dashboard's menu links {' and '.join(linked)}\n")
    return html


ATLAS_FOLDER = "atlas"  # in asv's html folder, beside the report


def write_beside_dashboard(records_dir: str, html_dir: str, out: TextIO) -> Optional[str]:
    """Refresh the report in asv's html folder from the newest host and commit of a records tree, and the atlas
    beside it for two or more versions (atlas.write, as `kerasbench atlas` writes it)."""
    from . import report
    from .atlas.inputs import load as load_atlas
    from .atlas.write import write as write_atlas
    from .tree import newest_run

    if not os.path.isdir(records_dir):
        return None
    (host, commit), folders, others = newest_run(records_dir)
    if not folders:
        return None
    path = os.path.join(html_dir, report.FILENAME)
    try:
        report.write(folders, path)
    except WriteError:  # a full disk: publish fails, naming the file (a report it could not make is a line)
        raise
    except UsageError as e:
        out.write(f"no HTML report: {e}\n")
        return None
    left = f"; {others} other host/commit folder(s) left out, see `kerasbench report`" if others else ""
    out.write(f"report: {path} ({host}, commit {commit}{left}); open it in a browser, it needs no server\n")
    try:
        groups = load_atlas(folders)
        if len(groups) >= 2:
            page_path = write_atlas(folders, os.path.join(html_dir, ATLAS_FOLDER), groups)[-1]
            out.write(f"atlas: {page_path} ({len(groups)} TF versions)\n")
    except WriteError:
        raise
    except UsageError as e:
        out.write(f"no atlas: {e}\n")
    return path


# kerasbench's pages beside the dashboard (report.write_beside_dashboard), as the dashboard's menu names them
PAGES = (("kerasbench-report.html", "kerasbench report"), ("atlas/index.html", "atlas"))
_MENU_END = '<li id="nav-li-regressions">'


def link_pages(html_dir: str) -> list:
    """Add a menu item to asv's index.html for each of PAGES that was written beside it (a visitor of the published
    site finds them from the dashboard); returns the pages linked. Nothing when asv's menu is not where asv 0.6 puts
    it (the dashboard stays as asv wrote it)."""
    index = os.path.join(html_dir, "index.html")
    found = [(page, name) for page, name in PAGES if os.path.isfile(os.path.join(html_dir, page))]
    if not found or not os.path.isfile(index):
        return []
    text = read_text(index, "dashboard page", DATA_LIMIT)
    at = text.find(_MENU_END)
    if at < 0 or 'id="nav-li-kerasbench' in text:
        return []
    end = text.find("</li>", at) + len("</li>")
    items = "".join(f'\n\t<li id="nav-li-kerasbench-{i}"><a href="{page}">{name}</a></li>'
                    for i, (page, name) in enumerate(found))
    write_text(index, text[:end] + items + text[end:], "the dashboard")
    return [page for page, _ in found]
