"""By hand: run ``POST /validate``'s logic over a folder of real Heat templates.

    .venv/bin/python scripts/heat_templates_conformance.py /path/to/heat-templates

Each ``*.yaml``/``*.template`` that declares a template version is validated
with the files beside it as the ``files`` map (what heatclient would send for
``get_file`` and provider templates). Prints the counts, then one line per
rejected template: Heat rejects the same ones (the repository's ``invalid/``
folders) with the same error types. Resource types are not checked: their
plugins are the engine's. Not part of ./test.sh: it needs a checkout that is
not ours to commit.
"""

from __future__ import annotations

import collections
import sys
import traceback
from pathlib import Path

from libs.template import errors
from libs.template.request import StackRequest, validate

VERSION_MARKERS = ("heat_template_version", "AWSTemplateFormatVersion", "HeatTemplateFormatVersion")


def _files_beside(path: Path) -> dict[str, str]:
    files = {}
    for other in path.parent.rglob("*"):
        if other.is_file() and other.stat().st_size < 512 * 1024:
            try:
                files[str(other.relative_to(path.parent))] = other.read_text()
            except UnicodeDecodeError:
                continue
    return files


def main(root: Path) -> int:
    counts: collections.Counter[str] = collections.Counter()
    lines = []
    for path in sorted([*root.rglob("*.yaml"), *root.rglob("*.template")]):
        text = path.read_text(errors="replace")
        if not any(marker in text for marker in VERSION_MARKERS):
            continue
        try:
            validate(StackRequest(template=text, files=_files_beside(path)), project_id="demo")
            counts["accepted"] += 1
        except errors.TemplateError as exc:
            counts["rejected"] += 1
            lines.append(f"{path.relative_to(root)} | {exc.error_type} | {str(exc)[:200]}")
        except Exception:
            counts["crashed"] += 1
            lines.append(f"{path.relative_to(root)} | CRASH | {traceback.format_exc()[-300:]}")
    print(dict(counts))
    print("\n".join(lines))
    return 1 if counts["crashed"] else 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
