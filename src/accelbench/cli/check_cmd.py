"""`accelbench check`: a bounded health check of every device, for a Slurm prolog or by hand.

Exit status: 0 healthy (warnings allowed), 1 a fault, 3 inconclusive (a busy machine), 2 bad usage.
"""
from __future__ import annotations

import json
import sys

from accelbench.health.model import LEVELS


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("--level", choices=LEVELS, default="standard",
                        help="quick (seconds), standard (about a minute, the default), long (minutes)")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument("--db", metavar="PATH", type=validate.DB,
                        help="results database for this machine's history and the fleet median (read only)")


def run(args) -> int:
    from accelbench.health.render import render
    from accelbench.health.run import run_check

    report = run_check(args.level, args.db)
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        render(report)
    return report.exit_code
