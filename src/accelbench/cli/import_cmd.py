"""`accelbench import`: runs from exported JSON files into the database, validated field by field."""
from __future__ import annotations


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("files", nargs="+", metavar="FILE", type=validate.path("an exported JSON file"), help="documents written by `accelbench export`")
    parser.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE",
                        help="tag every imported run (repeatable), e.g. --tag node=gpu01")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database")


def parse_tags(items: list[str]) -> dict[str, str]:
    from accelbench.errors import UsageError

    tags = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--tag: {item!r} is not KEY=VALUE")
        tags[key.strip()] = value.strip()
    return tags


def run(args) -> int:
    from accelbench.store.db import Store
    from accelbench.store.import_file import import_file
    from accelbench.terminal import printable

    tags = parse_tags(args.tag)
    with Store(args.db) as store:
        for path in args.files:  # each file in one transaction: all of its runs, or none
            added = import_file(store, path, tags=tags or None)
            print(printable(f"{path}: {len(added)} run(s) imported" + (f" ({', '.join(added)})" if added else
                                                                      " (already present)")))
    return 0
