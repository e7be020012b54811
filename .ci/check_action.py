"""Checks a composite action's metadata (actionlint lints workflows, not action.yml).

Usage: python3 .ci/check_action.py .github/actions/firestore-emulator/action.yml

Fails unless the file is valid YAML with a name, a description, inputs that each have
a description and are each used, outputs with values, and `runs.using: composite`
whose steps each have exactly one of `uses` and `run`, every `run` step a `shell`,
every `${{ inputs.x }}` naming a declared input, and every script the steps name
beside the action existing.
"""

import pathlib
import re
import sys

import yaml


def fail(path, message):
    print(f"{path}: {message}", file=sys.stderr)
    sys.exit(1)


def main(path):
    text = pathlib.Path(path).read_text()
    action = yaml.safe_load(text)
    if not isinstance(action, dict):
        fail(path, "not a YAML mapping")
    for key in ("name", "description", "runs"):
        if not action.get(key):
            fail(path, f"missing `{key}`")
    inputs = action.get("inputs") or {}
    for name, spec in inputs.items():
        if not (isinstance(spec, dict) and spec.get("description")):
            fail(path, f"input `{name}` has no description")
    for name, spec in (action.get("outputs") or {}).items():
        if not (isinstance(spec, dict) and spec.get("value")):
            fail(path, f"output `{name}` has no value")
    runs = action["runs"]
    if runs.get("using") != "composite":
        fail(path, "runs.using is not composite")
    steps = runs.get("steps") or []
    if not steps:
        fail(path, "no steps")
    for index, step in enumerate(steps):
        label = step.get("name", f"step {index + 1}")
        if ("uses" in step) == ("run" in step):
            fail(path, f"{label}: needs exactly one of `uses` and `run`")
        if "run" in step and not step.get("shell"):
            fail(path, f"{label}: a `run` step needs `shell`")
    used = set(re.findall(r"inputs\.([A-Za-z0-9_-]+)", text))
    for name in used - set(inputs):
        fail(path, f"`inputs.{name}` is not a declared input")
    for name in set(inputs) - used:
        fail(path, f"input `{name}` is declared but never used")
    here = pathlib.Path(path).parent
    for script in set(re.findall(r"\$GITHUB_ACTION_PATH/([A-Za-z0-9_-]+\.sh)", text)):
        if not (here / script).is_file():
            fail(path, f"the steps run {script}, which is not beside the action")
    print(f"{path}: ok ({len(inputs)} inputs, {len(steps)} steps)")


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        main(argument)
