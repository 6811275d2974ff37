"""Validates xclaw's real --json output against the schemas in docs/json (JSON Schema draft 2020-12), with PyPI's
jsonschema. Reads one JSON request from the file its argument names (else stdin) and prints one JSON answer on
stdout:

  {"schemas": DIR, "checks": [{"name": WHAT, "schema": COMMAND, "stdout": TEXT}, ...]}
      → {"errors": ["WHAT: why", ...]}: each stdout must be exactly one JSON document on one line, valid against
        docs/json/COMMAND.schema.json
  {"schemas": DIR, "lint": true}
      → {"errors": [...], "schemas": N}: every schema is a valid 2020-12 schema, and every object in it is strict
        (properties, required naming only its properties, additionalProperties false; a map's additionalProperties
        is a schema), so a renamed or added key fails the check
"""
import json
import os
import sys

from jsonschema import Draft202012Validator
from referencing import Registry, Resource


def load(directory):
    schemas = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".schema.json"):
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                schemas[name[: -len(".schema.json")]] = json.load(f)
    return schemas


def registry(schemas):
    return Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema)) for schema in schemas.values())


def strictness(node, where, errors):
    if isinstance(node, dict):
        if node.get("type") == "object":
            if "properties" in node:
                if node.get("additionalProperties") is not False:
                    errors.append(f"{where}: an object with properties must say additionalProperties: false")
                unknown = set(node.get("required", [])) - set(node["properties"])
                if unknown:
                    errors.append(f"{where}: requires keys it does not describe: {sorted(unknown)}")
                if "required" not in node:
                    errors.append(f"{where}: an object with properties must list the required ones")
            elif not isinstance(node.get("additionalProperties"), dict):
                errors.append(f"{where}: a map must say what its values are (additionalProperties: a schema)")
        for key, value in node.items():
            strictness(value, f"{where}/{key}", errors)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            strictness(value, f"{where}/{index}", errors)


def main():
    if len(sys.argv) > 1:
        with open(sys.argv[1], encoding="utf-8") as f:
            request = json.load(f)
    else:
        request = json.load(sys.stdin)
    schemas = load(request["schemas"])
    errors = []
    if request.get("lint"):
        for name, schema in schemas.items():
            try:
                Draft202012Validator.check_schema(schema)
            except Exception as error:  # the schema itself is wrong
                errors.append(f"{name}: {error}")
            if schema.get("$id") != "urn:xclaw:json:" + name:
                errors.append(f"{name}: $id must be urn:xclaw:json:{name}")
            strictness(schema, name, errors)
        print(json.dumps({"errors": errors, "schemas": len(schemas)}))
        return
    known = registry(schemas)
    for check in request["checks"]:
        what, command, text = check["name"], check["schema"], check["stdout"]
        if command not in schemas:
            errors.append(f"{what}: no schema docs/json/{command}.schema.json")
            continue
        lines = text.split("\n")
        if len(lines) != 2 or lines[1] != "":
            errors.append(f"{what}: stdout is not one line of JSON: {text[:300]!r}")
            continue
        try:
            instance = json.loads(lines[0])
        except ValueError as error:
            errors.append(f"{what}: stdout is not JSON ({error}): {text[:300]!r}")
            continue
        validator = Draft202012Validator(schemas[command], registry=known)
        for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
            path = "/".join(str(p) for p in error.absolute_path)
            errors.append(f"{what}: at /{path}: {error.message[:300]}")
    print(json.dumps({"errors": errors}))


main()
