"""`kerasbench publish`: asv publish, with the dashboard made to work offline, and the HTML report beside it; then
the verdicts of the newest run's records and how to open the report and the dashboard (the Quick start's last
step: what a user reads when the suite ends)."""

import argparse
import os
from typing import List, Optional, TextIO

NAME = "publish"
HELP = "asv publish (the dashboard's scripts copied locally), the HTML report beside it, then the run's verdicts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="asv config file (default: asv.conf.json in $KERASBENCH_CONFIG, the current "
                   "folder, or the clone kerasbench was imported from)")
    p.add_argument("--cdn", action="store_true", help="keep asv's CDN links (no npm needed)")


def newest_records(conf_dir: str) -> tuple:
    """((machines, commit), [(record, TF version or None)]) of the newest commit in the records tree beside the asv
    results of `conf_dir` (what `asv run` just wrote); ((None, None), []) when there are none. Records that cannot
    be read are left to `kerasbench report`, which names them."""
    from ..errors import UsageError
    from ..loading import find_records_files, read_records_file
    from ..tree import newest_run, records_root

    root = records_root(conf_dir)
    if not os.path.isdir(root):
        return (None, None), []
    place, folders, _ = newest_run(root)
    loaded = []
    try:
        for path, _named in find_records_files(folders):
            payload = read_records_file(path)
            if isinstance(payload, dict) and isinstance(payload.get("records"), list):
                loaded += [(r, (r.get("environment") or {}).get("tensorflow")) for r in payload["records"]
                           if isinstance(r, dict) and {"status", "summary", "loop", "strategy"} <= set(r)]
    except UsageError:
        pass
    return place, loaded


def how_to_open(html: str, report: Optional[str], config: str = "asv.conf.json") -> List[str]:
    """Where the report and the dashboard are, and how each opens: the report from its file, the dashboard only
    served (asv's page fetches its JSON, which a browser refuses from file://)."""
    here = os.getcwd()
    shown = os.path.relpath(html, here) if html.startswith(here + os.sep) else html
    lines = []
    if report and os.path.isfile(report):
        path = os.path.relpath(report, here) if report.startswith(here + os.sep) else report
        lines.append(f"report:    {path}  (open the file in a browser; no server needed)")
    preview = "asv preview" + ("" if os.path.basename(config) == "asv.conf.json" else f" --config {config}")
    lines.append(f"dashboard: {preview}  (then http://127.0.0.1:8080, or the address it prints)")
    lines.append(f"           asv's page in {shown} does not open from file://: it loads its data over HTTP")
    return lines


def run(args: argparse.Namespace, out: TextIO) -> int:
    from ..asvconf import DEFAULT_CONFIG, find_config
    from ..console import terminal_width
    from ..runtable import suite_verdicts
    from ..dashboard import publish_dashboard
    from ..report import FILENAME

    # not the installed package's config: asv publishes a clone's results (its repository's history)
    config = find_config(args.config, DEFAULT_CONFIG, installed=False)
    html = publish_dashboard(config, cdn=args.cdn, out=out)
    (machines, commit), loaded = newest_records(os.path.dirname(os.path.abspath(config)))
    if loaded:
        out.write(f"\nThe newest run's verdicts ({machines}, commit {commit}):\n")
        out.write("\n".join(suite_verdicts(loaded, terminal_width(out))) + "\n")
    out.write("\n" + "\n".join(how_to_open(html, os.path.join(html, FILENAME), config)) + "\n")
    return 0
