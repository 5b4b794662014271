"""Sorts the differences of a judge report (--json) into categories, for docs/differential.md.

usage: python3 categorise.py REPORT.json [EXAMPLES_PER_CATEGORY]

Each differing exchange is counted once, under the first category (in the order below) that
one of its differences falls into; the other categories its differences touch are counted in
the 'touched' column. The rules read the JSON pointer of each difference and the two statuses.
"""
import collections
import json
import re
import sys

report = json.load(open(sys.argv[1]))
per = int(sys.argv[2]) if len(sys.argv) > 2 else 3

CATEGORIES = [
    ("status-code", "a different status code: one side accepts what the other rejects (validation, admission, semantics)"),
    ("discovery-openapi", "discovery and OpenAPI documents: groups, resources, verbs, paths, definitions"),
    ("error-text", "the same error code, another Status message, reason or details (causes, kind, name)"),
    ("watch", "watch streams: events, their order, bookmarks"),
    ("list-shape", "list and page shape: items' kind/apiVersion, remainingItemCount, continue, order, the list's resourceVersion"),
    ("table", "Table output: column definitions and cells"),
    ("defaulting", "defaulted fields present on one side only (spec, template, metadata.generation)"),
    ("controllers", "what controllers write: status, finalizers, annotations, their managedFields entries"),
    ("managed-fields", "managedFields encoding (fieldsV1 '.' entries, subresource, managers, times)"),
    ("resource-version", "resourceVersion: whether a write made a new version, and which a read returns"),
    ("protobuf", "protobuf and other encodings: content type and structure"),
    ("other", "anything else"),
]


def cats_of(e, d):
    p = d["path"]
    g = re.sub(r"/\d+", "/N", p)
    out = []
    if p == "/status" or p == "/error":
        out.append("status-code")
    if e["group"] in ("discovery", "openapi"):
        out.append("discovery-openapi")
    if e["left_status"] and e["left_status"] >= 400 and e["left_status"] == e["right_status"]:
        out.append("error-text")
    if p.startswith("/body/events") or p == "/body/ended":
        out.append("watch")
    if "protobuf" in p or p == "/contentType":
        out.append("protobuf")
    if re.match(r"/body/items/N/(kind|apiVersion)$", g) or "remainingItemCount" in p or "/metadata/continue" in p:
        out.append("list-shape")
    if p.startswith("/body/columnDefinitions") or re.match(r"/body/rows/N/cells", g):
        out.append("table")
    if "managedFields" in p:
        if re.search(r"managedFields/N$", g) or "/manager" in p:
            out.append("controllers")
        out.append("managed-fields")
    if re.search(r"/(status|finalizers|annotations)(/|$)", p) and "managedFields" not in p:
        out.append("controllers")
    if "/spec" in p or "/template" in p or p.endswith("/generation") or "/generation" in p:
        out.append("defaulting")
    if p.endswith("/resourceVersion"):
        out.append("resource-version")
    if re.match(r"/body/items/N/metadata/(name|uid)$", g):
        out.append("list-shape")
    return out or ["other"]


order = [c for c, _ in CATEGORIES]
primary = collections.Counter()
touched = collections.Counter()
examples = collections.defaultdict(list)
for e in report["exchanges"]:
    if e["identical"]:
        continue
    cs = set()
    for d in e["diffs"]:
        cs.update(cats_of(e, d))
    first = min(cs, key=order.index)
    primary[first] += 1
    for c in cs:
        touched[c] += 1
    if len(examples[first]) < per:
        d = next(d for d in e["diffs"] if first in cats_of(e, d))
        examples[first].append((e, d))

total = report["total"]
print(f"{report['identical']} of {total} identical; {total - report['identical']} differ\n")
print("| category | exchanges (first category) | exchanges touched | what |")
print("| --- | ---: | ---: | --- |")
for c, what in CATEGORIES:
    if touched[c]:
        print(f"| {c} | {primary[c]} | {touched[c]} | {what} |")
print()
for c, what in CATEGORIES:
    if not examples[c]:
        continue
    print(f"### {c}\n")
    for e, d in examples[c]:
        l = json.dumps(d.get("left"))[:160] if "left" in d else "(absent)"
        r = json.dumps(d.get("right"))[:160] if "right" in d else "(absent)"
        name = e.get("name") or ""
        print(f"- `{e['script']}` step {e['step']} {name}: `{e['method']} {e['uri'][:100]}` "
              f"({e['left_status']} / {e['right_status']}) `{d['path']}`: sim `{l}`, real `{r}`")
    print()

# The most frequent difference patterns: JSON pointers with indices generalised, list items and
# Table rows folded onto the object, managedFields' field sets folded; per pattern, how many
# exchanges show it and on which side (sim only, real only, both with other values).
patterns = collections.Counter()
first_example = {}
for e in report["exchanges"]:
    if e["identical"]:
        continue
    seen = set()
    for d in e["diffs"]:
        p = re.sub(r"/\d+", "/N", d["path"])
        p = re.sub(r"^/body/(items/N/|rows/N/object/)", "/body/", p)
        p = re.sub(r"/managedFields/N/fieldsV1/.*", "/managedFields/N/fieldsV1/...", p)
        parts = p.split("/")
        if len(parts) > 3 and parts[2] in ("definitions", "paths", "resources", "groups"):
            p = "/".join(parts[:3]) + "/*"
        side = "sim only" if "right" not in d else "real only" if "left" not in d else "both"
        k = (p, side)
        if k in seen:
            continue
        seen.add(k)
        patterns[k] += 1
        first_example.setdefault(k, (e, d))
print("### The most frequent difference patterns\n")
print("| exchanges | pointer | present | example (sim / real) |")
print("| ---: | --- | --- | --- |")
for (p, side), n in patterns.most_common(int(sys.argv[3]) if len(sys.argv) > 3 else 40):
    e, d = first_example[(p, side)]
    l = json.dumps(d.get("left"))[:70] if "left" in d else "-"
    r = json.dumps(d.get("right"))[:70] if "right" in d else "-"
    ex = f"`{e['script']}` {e.get('name') or e['uri'][:50]}: `{l}` / `{r}`".replace("|", "\\|")
    print(f"| {n} | `{p}` | {side} | {ex} |")
