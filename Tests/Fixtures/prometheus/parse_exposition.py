#!/usr/bin/env python3
"""Parses a Prometheus text exposition with the reference client's parser (prometheus_client)
and prints its samples as JSON: [{"name": ..., "labels": {...}, "value": ...}, ...] plus each
family's type and its # HELP text ("" without one). Exits 2 with the parser's message when the text does not parse.

usage: parse_exposition.py FILE
"""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    samples = []
    types = {}
    docs = {}
    try:
        for family in text_string_to_metric_families(text):
            types[family.name] = family.type
            docs[family.name] = family.documentation
            for s in family.samples:
                samples.append({"name": s.name, "labels": s.labels, "value": s.value})
    except Exception as e:  # the parser raises ValueError (and others) on bad text
        print(f"not Prometheus text: {e}", file=sys.stderr)
        return 2
    json.dump({"types": types, "docs": docs, "samples": samples}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
