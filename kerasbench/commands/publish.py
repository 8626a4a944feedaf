"""`kerasbench publish`: asv publish, with the dashboard made to work offline, and the HTML report beside it."""

import argparse
from typing import TextIO

NAME = "publish"
HELP = "asv publish, with the dashboard's scripts copied locally (works offline)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="asv config file (default: asv.conf.json in $KERASBENCH_CONFIG, the current "
                   "folder, or the clone kerasbench was imported from)")
    p.add_argument("--cdn", action="store_true", help="keep asv's CDN links (no npm needed)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    from ..asvconf import DEFAULT_CONFIG, find_config
    from ..dashboard import publish_dashboard

    # not the installed package's config: asv publishes a clone's results (its repository's history)
    publish_dashboard(find_config(args.config, DEFAULT_CONFIG, installed=False), cdn=args.cdn, out=out)
    return 0
