"""`kerasbench envs`: the asv environments of a config (names for `asv run -E`), with their pins."""

import argparse
from typing import TextIO

NAME = "envs"
HELP = "the asv environments of a config (names for `asv run -E`)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="asv config file (default: asv.matrix.json, found as for run --tf)")
    p.add_argument("--tf", help="only the environment of this TensorFlow release (patch releases too, as run --tf); "
                   "prints its bare name")
    p.add_argument("--create", metavar="NAME", action="append", default=[],
                   help="make this environment (a name `envs` lists; comma list or repeated; 'all': every one) where "
                   "`asv run -E NAME` finds it, with uv where installed (one resolve, wheels linked from uv's cache): "
                   "asv then installs only the project into it (CI makes them so, from a cached uv folder)")
    p.add_argument("--json", action="store_true", help="the environments as one line of JSON, GitHub Actions' "
                   "matrix form {\"include\": [{name, tf, tf_package, keras, python, device, config}]}")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """The environments with their pins (or the bare name of one TF release's; --json: a matrix)."""
    import json

    from ..asvconf import find_config, matrix_entries, matrix_json, split_pin
    from ..environment import environments

    config = find_config(args.config)
    if args.create:
        import sys
        import time

        from ..environment import create

        names = [n.strip() for value in args.create for n in value.split(",") if n.strip()]
        empty = next((value for value in args.create if not value.replace(",", "").strip()), None)
        if empty is not None:  # before, `--create ''` made nothing and said "0 environment(s) ready", exit 0
            from ..errors import UsageError

            raise UsageError(f"Invalid --create. Received: {empty!r}. Expected an environment's name, a comma list "
                             "of them or 'all' (`kerasbench envs` lists them).")
        if "all" in names:
            names = [e["name"] for e in matrix_entries(config)]
        started = time.monotonic()
        made = create(config, names, lambda text: print(f"kerasbench envs: {text}", file=sys.stderr, flush=True))
        for name, python in made:
            out.write(f"{name}\t{python}\n")
        print(f"kerasbench envs: {len(made)} environment(s) ready in {time.monotonic() - started:.0f} s",
              file=sys.stderr)
        return 0
    if args.json:  # one line: a CI job writes it to $GITHUB_OUTPUT and fans out over it
        out.write(json.dumps(matrix_json(config), separators=(",", ":")) + "\n")
        return 0
    if args.tf:
        out.write("".join(name + "\n" for name, _ in environments(config, args.tf)))
        return 0
    for entry in matrix_entries(config):
        pins = [(package, version, " (" + " ".join(flags) + ")" if flags else "")
                for package, version, flags in (split_pin(k, v) for k, v in entry["req"].items())]
        said = [f"{package}=={version}{flags}" for package, version, flags in sorted(pins)]
        said += [f"{key}={value}" for key, value in sorted(entry["env"].items())]
        axis = f"  [{entry['axis']}]" if entry["axis"] else ""
        out.write(f"{entry['name']}{axis}\n    {', '.join(said)}\n")
    return 0
