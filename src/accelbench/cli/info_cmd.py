"""`accelbench info`: a deviceQuery for every device on the machine."""
from __future__ import annotations

import json
import sys

from accelbench.devices.inventory import probe_names


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("--json", action="store_true", help="print the inventory as JSON (schema: docs/info-schema.md)")
    parser.add_argument("--probe", metavar="NAMES", type=validate.choice_list(probe_names, extra=("all",)),
                        help=f"comma-separated probes to run, or 'all' (known: {', '.join(probe_names())}; "
                             "default: all but the framework probes, which import their framework)")
    parser.add_argument("--all", action="store_true", help="run every probe, the framework ones too (slower)")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database to read measured peaks from")
    parser.add_argument("--schema", action="store_true", help="print the JSON schema of --json output and exit")


def run(args) -> int:
    from accelbench.devices.inventory import parse_probe_names
    from accelbench.store.ceilings import measured_inventory

    if args.schema:
        from accelbench.schemas import load_schema
        print(json.dumps(load_schema("info"), indent=2))
        return 0
    probes = parse_probe_names("all" if args.all else args.probe)
    inventory = measured_inventory(probes, db_path=args.db)
    if args.json:
        json.dump(inventory.to_dict(include_debug=args.debug), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    from accelbench.cli.info_render import render_inventory
    render_inventory(inventory, debug=args.debug)
    return 0
