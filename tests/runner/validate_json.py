#!/usr/bin/env python3
"""Validates every line of a JSON-lines file against a JSON Schema (draft 2020-12).

usage: validate_json.py SCHEMA LINES
Prints "N valid" and exits 0, or prints each invalid line's errors (line number, path, message) and exits 1.
Exit 2 when the schema itself is invalid or python3-jsonschema is missing (scripts/setup installs it).
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("validate_json.py: python3-jsonschema is not installed (scripts/setup)", file=sys.stderr)
    sys.exit(2)


def main() -> int:
    schema_path, lines_path = sys.argv[1], sys.argv[2]
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        print(f"{schema_path}: not a valid schema: {e.message}", file=sys.stderr)
        return 2
    validator = jsonschema.Draft202012Validator(schema)
    valid = 0
    invalid = 0
    with open(lines_path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            errors = sorted(validator.iter_errors(json.loads(line)), key=lambda e: list(e.absolute_path))
            if errors:
                invalid += 1
                for e in errors:
                    path = ".".join(str(p) for p in e.absolute_path) or "(top)"
                    print(f"{lines_path}:{number}: {path}: {e.message}")
            else:
                valid += 1
    print(f"{valid} valid, {invalid} invalid")
    return 0 if invalid == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
