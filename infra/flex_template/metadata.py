"""Writes `metadata.json`, the Flex Template's parameters, from the options' declarations.

A `rt4chart stream` option declared on a stage's config with a `Flex`
(transforms/common/options_spec.py)
is a template parameter as it declares; the template's own fields are in `metadata_base.json`.
The parameters follow the order of `rt4chart stream`'s options.

    python infra/flex_template/metadata.py          # rewrite metadata.json
    python infra/flex_template/metadata.py --check  # exit 1 if metadata.json is not current
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rt4chart.pipeline.options.flags import declared_flex

HERE = Path(__file__).resolve().parent
METADATA = HERE / "metadata.json"
BASE = HERE / "metadata_base.json"


def build() -> dict:
    """The template's metadata: its fields, then one parameter per templated stream option."""
    base = json.loads(BASE.read_text())
    base.pop("_comment", None)
    return {**base, "parameters": list(declared_flex().values())}


def render() -> str:
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if metadata.json is not what the declarations give")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if METADATA.read_text() != text:
            print(f"{METADATA} is not current: run python {Path(__file__).name}",
                  file=sys.stderr)
            return 1
        return 0
    METADATA.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
