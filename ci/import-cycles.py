#!/usr/bin/env python3
"""Import cycles between sibling modules, in every crate of the workspace.

For each crate (harness/*/src, fixtures/*/src; or the crate directories named on the command
line) this builds the module tree from the `mod` declarations (files, `mod.rs`, `#[path]`, inline
`mod x { ... }`) and the module graph from the paths the code names: `use` trees and `crate::`,
`super::` and `self::` paths in expressions and types (comments and string literals do not
count). A path resolves to the deepest declared module it names (`crate::report::console::f` ->
`report::console`); paths of external crates are ignored.

A cycle is among siblings: at every level of the tree, each module's subtree is collapsed to
that module, and a cycle among the children of one parent is reported (`runner -> report ->
runner` at the crate root, `report::console -> report::html -> report::console` inside
`report`). A module naming its own ancestors' items (`use super::*`) or its descendants is not a
cycle: a module may use its parent, and a parent its children.

Each cycle prints as one line

    crate: a -> b -> a (file:line a -> b; file:line b -> a)

with one reference behind each edge, and the exit code is 1 when there is any. Standard
library only. `--self-test` checks the checker on small trees it writes to a temporary
directory.
"""

import argparse
import os
import re
import sys
import tempfile
from collections import defaultdict, deque

# ---------------------------------------------------------------------------------------------
# Lexing: blank comments and literals (keeping newlines, so offsets keep their line numbers).


def strip_comments_and_strings(src):
    out = list(src)
    i, n = 0, len(src)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if c == "/" and i + 1 < n and src[i + 1] == "/":
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif c == "/" and i + 1 < n and src[i + 1] == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c in "rb" and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            # r"..", r#".."#, br"..", b"..", b'..'
            m = re.match(r'(br|r|b)(#*)"', src[i:])
            if m and (m.group(1) != "b" or m.group(2) == ""):
                if "r" in m.group(1):
                    end = '"' + m.group(2)
                    j = src.find(end, i + m.end())
                    j = n if j < 0 else j + len(end)
                else:
                    j = skip_quoted(src, i + m.end(), '"')
                blank(i, j)
                i = j
            elif src.startswith("b'", i):
                j = skip_quoted(src, i + 2, "'")
                blank(i, j)
                i = j
            else:
                i += 1
        elif c == '"':
            j = skip_quoted(src, i + 1, '"')
            blank(i, j)
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}') or a lifetime/label ('a).
            if i + 1 < n and src[i + 1] == "\\":
                j = skip_quoted(src, i + 1, "'")
                blank(i, j)
                i = j
            elif i + 2 < n and src[i + 2] == "'":
                blank(i, i + 3)
                i += 3
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def skip_quoted(src, j, quote):
    """The offset after the closing quote, from just after the opening one."""
    n = len(src)
    while j < n:
        if src[j] == "\\":
            j += 2
        elif src[j] == quote:
            return j + 1
        else:
            j += 1
    return n


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


# ---------------------------------------------------------------------------------------------
# The module tree.

MOD_RE = re.compile(
    r"(?P<attrs>(?:#\s*\[[^\]]*\]\s*)*)"
    r"(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(?P<name>r#\w+|\w+)\s*(?P<end>[;{])"
)
PATH_ATTR_RE = re.compile(r'#\s*\[\s*path\s*=\s*"([^"]*)"\s*\]')


class Module:
    def __init__(self, path, file, parent):
        self.path = path  # tuple of names, () for the crate root
        self.file = file  # the file its items are in
        self.parent = parent
        self.children = {}


class Crate:
    def __init__(self, name, root_file):
        self.name = name
        self.root = Module((), root_file, None)
        self.modules = {(): self.root}
        # (src module path, dst module path, file, line)
        self.refs = []
        self.files = {}  # file -> (raw text, stripped text)


def read(crate, file):
    if file not in crate.files:
        with open(file, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        crate.files[file] = (raw, strip_comments_and_strings(raw))
    return crate.files[file]


def matching_brace(text, open_at):
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text)


def child_dir(module, file):
    """Where a file module's `mod x;` children live."""
    base = os.path.basename(file)
    d = os.path.dirname(file)
    if module.parent is None or base == "mod.rs":
        return d
    return os.path.join(d, os.path.splitext(base)[0])


def load_module(crate, module, file, start, end, dir_for_children):
    """Declare the children of `module`, whose items are file[start:end]; collect spans."""
    raw, text = read(crate, file)
    spans = []  # (start, end) of inline child modules, excluded from this module's own text
    pos = start
    for m in MOD_RE.finditer(text, start, end):
        if m.start() < pos:
            continue
        # `mod` as a keyword only (not `foo_mod x`): the match starts at attrs/pub/mod.
        before = text[m.start() - 1] if m.start() > 0 else " "
        if before.isalnum() or before == "_":
            continue
        name = m.group("name")
        if name.startswith("r#"):
            name = name[2:]
        # attributes: the raw text (stripping blanked the path string)
        attrs_raw = raw[m.start("attrs") : m.end("attrs")]
        path_attr = PATH_ATTR_RE.search(attrs_raw)
        child = Module(module.path + (name,), None, module)
        module.children[name] = child
        crate.modules[child.path] = child
        if m.group("end") == "{":
            close = matching_brace(text, m.end() - 1)
            child.file = file
            sub_dir = os.path.join(dir_for_children, name)
            if path_attr:
                sub_dir = os.path.join(dir_for_children, path_attr.group(1))
            spans.append((m.end(), close, child))
            load_module(crate, child, file, m.end(), close, sub_dir)
            pos = close + 1
        else:
            if path_attr:
                f = os.path.normpath(os.path.join(os.path.dirname(file), path_attr.group(1)))
            else:
                a = os.path.join(dir_for_children, name + ".rs")
                b = os.path.join(dir_for_children, name, "mod.rs")
                f = a if os.path.isfile(a) else b
            if not os.path.isfile(f):
                continue  # generated or cfg'd out: nothing to read
            child.file = f
            _, ctext = read(crate, f)
            load_module(crate, child, f, 0, len(ctext), child_dir(child, f))
            pos = m.end()
    module_spans = getattr(module, "spans", [])
    module_spans.append((file, start, end, spans))
    module.spans = module_spans


# ---------------------------------------------------------------------------------------------
# References.

USE_RE = re.compile(r"(?<![\w$])use\s+")
PUB_IN_RE = re.compile(r"pub\s*\(\s*in\s+[^)]*\)")
PATH_RE = re.compile(r"(?<![\w$:])(crate|super|self)((?:\s*::\s*(?:r#)?\w+)+)")


def split_use_tree(tree):
    """`crate::{a::b, c::{self, d}}` -> [[crate, a, b], [crate, c], [crate, c, d]]."""
    tree = re.sub(r"\s+as\s+(?:r#)?\w+", "", tree)  # aliases
    tree = re.sub(r"\s+", "", tree)
    out = []

    def parse(s, prefix):
        # split at top-level commas
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        for p in parts:
            brace = p.find("{")
            if brace >= 0:
                head = p[:brace].rstrip(":")
                inner = p[brace + 1 : p.rfind("}")]
                segs = [x for x in head.split("::") if x]
                parse(inner, prefix + segs)
            else:
                segs = [x for x in p.split("::") if x]
                if segs and segs[-1] == "self":
                    segs = segs[:-1]
                if segs and segs[-1] == "*":
                    segs = segs[:-1]
                out.append(prefix + segs)

    parse(tree, [])
    return out


def use_trees(text, start, end):
    """(offset, tree text) of each `use` declaration in text[start:end], and the text with them
    blanked."""
    found = []
    for m in USE_RE.finditer(text, start, end):
        semi = text.find(";", m.end(), end)
        if semi < 0:
            continue
        found.append((m.start(), m.end(), semi))
    return found


def resolve(crate, module, segs, is_use):
    """The deepest declared module `segs` (named in `module`) points into, or None (external)."""
    segs = [s[2:] if s.startswith("r#") else s for s in segs]
    if not segs:
        return None
    head = segs[0]
    if head == "crate":
        base, rest = (), segs[1:]
    elif head in ("super", "self"):
        base = module.path
        rest = segs
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                if not base:
                    return None
                base = base[:-1]
            rest = rest[1:]
    elif is_use and head in module.children:
        base, rest = module.path, segs
    else:
        return None
    path = base
    for s in rest:
        cand = path + (s,)
        if cand in crate.modules:
            path = cand
        else:
            break
    return path


def collect_refs(crate):
    for module in list(crate.modules.values()):
        for file, start, end, inner in getattr(module, "spans", []):
            raw, text = read(crate, file)
            # The module's own text: its span less its inline children.
            pieces, pos = [], start
            for s, e, _ in sorted(inner, key=lambda x: x[0]):
                pieces.append((pos, s))
                pos = e + 1
            pieces.append((pos, end))
            for a, b in pieces:
                chunk = list(text[a:b])
                for us, ue, semi in use_trees(text, a, b):
                    tree = text[ue:semi]
                    for segs in split_use_tree(tree):
                        dst = resolve(crate, module, segs, True)
                        if dst is not None:
                            crate.refs.append((module.path, dst, file, line_of(text, us)))
                    for k in range(us - a, semi - a):
                        if chunk[k] != "\n":
                            chunk[k] = " "
                body = PUB_IN_RE.sub(lambda m: " " * len(m.group(0)), "".join(chunk))
                for m in PATH_RE.finditer(body):
                    segs = [m.group(1)] + [
                        s.strip() for s in m.group(2).split("::") if s.strip()
                    ]
                    dst = resolve(crate, module, segs, False)
                    if dst is not None:
                        crate.refs.append((module.path, dst, file, line_of(text, a + m.start())))


# ---------------------------------------------------------------------------------------------
# Cycles among siblings.


def name_of(path):
    return "::".join(path) if path else "crate"


def sibling_cycles(crate):
    """[(parent path, [child paths of the cycle, first repeated at the end], [ref per edge])]."""
    found = []
    for parent in sorted(crate.modules):
        plen = len(parent)
        if not crate.modules[parent].children:
            continue
        edges = defaultdict(list)  # (top src, top dst) -> refs
        for src, dst, file, line in crate.refs:
            if src[:plen] != parent or dst[:plen] != parent:
                continue
            if len(src) == plen or len(dst) == plen:
                continue  # the parent itself, or naming it: not among siblings
            a, b = src[: plen + 1], dst[: plen + 1]
            if a != b:
                edges[(a, b)].append((file, line, src, dst))
        if not edges:
            continue
        graph = defaultdict(set)
        for a, b in edges:
            graph[a].add(b)
        for comp in strongly_connected(graph):
            if len(comp) < 2:
                continue
            seen = set()
            for start in sorted(comp):
                cyc = shortest_cycle(graph, start, comp)
                if not cyc:
                    continue
                key = canonical(cyc)
                if key in seen:
                    continue
                seen.add(key)
                refs = [sorted(edges[(cyc[k], cyc[k + 1])])[0] for k in range(len(cyc) - 1)]
                counts = [len(edges[(cyc[k], cyc[k + 1])]) for k in range(len(cyc) - 1)]
                found.append((parent, cyc, refs, counts))
    return found


def canonical(cyc):
    body = cyc[:-1]
    k = body.index(min(body))
    return tuple(body[k:] + body[:k])


def strongly_connected(graph):
    nodes = set(graph)
    for vs in graph.values():
        nodes |= vs
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # iterative Tarjan
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                elif w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def shortest_cycle(graph, start, comp):
    prev = {start: None}
    q = deque([start])
    while q:
        v = q.popleft()
        for w in sorted(graph.get(v, ())):
            if w not in comp:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                path.reverse()
                return path + [start]
            if w not in prev:
                prev[w] = v
                q.append(w)
    return None


# ---------------------------------------------------------------------------------------------
# Crates.


def crate_name(crate_dir):
    try:
        with open(os.path.join(crate_dir, "Cargo.toml"), encoding="utf-8") as f:
            in_package = False
            for line in f:
                s = line.strip()
                if s.startswith("["):
                    in_package = s == "[package]"
                elif in_package:
                    m = re.match(r'name\s*=\s*"([^"]+)"', s)
                    if m:
                        return m.group(1)
    except OSError:
        pass
    return os.path.basename(os.path.normpath(crate_dir))


def crate_roots(crate_dir):
    """(label, root file) of the lib and each binary in crate_dir/src."""
    src = os.path.join(crate_dir, "src")
    name = crate_name(crate_dir)
    roots = []
    lib = os.path.join(src, "lib.rs")
    if os.path.isfile(lib):
        roots.append((name, lib))
    main = os.path.join(src, "main.rs")
    if os.path.isfile(main):
        roots.append((name + " (bin)" if roots else name, main))
    bindir = os.path.join(src, "bin")
    if os.path.isdir(bindir):
        for e in sorted(os.listdir(bindir)):
            p = os.path.join(bindir, e)
            if e.endswith(".rs"):
                roots.append(("%s (bin %s)" % (name, e[:-3]), p))
            elif os.path.isfile(os.path.join(p, "main.rs")):
                roots.append(("%s (bin %s)" % (name, e), os.path.join(p, "main.rs")))
    return roots


def analyse(label, root_file):
    crate = Crate(label, root_file)
    _, text = read(crate, root_file)
    load_module(crate, crate.root, root_file, 0, len(text), os.path.dirname(root_file))
    collect_refs(crate)
    return crate, sibling_cycles(crate)


def format_cycle(label, cycle, base):
    _, cyc, refs, counts = cycle
    names = " -> ".join(name_of(p) for p in cyc)
    where = []
    for (file, line, src, dst), count in zip(refs, counts):
        more = " (+%d more)" % (count - 1) if count > 1 else ""
        where.append(
            "%s:%d %s -> %s%s" % (os.path.relpath(file, base), line, name_of(src), name_of(dst), more)
        )
    return "%s: %s (%s)" % (label, names, "; ".join(where))


def default_crate_dirs(repo):
    out = []
    for top in ("harness", "fixtures"):
        d = os.path.join(repo, top)
        if not os.path.isdir(d):
            continue
        for e in sorted(os.listdir(d)):
            if os.path.isdir(os.path.join(d, e, "src")):
                out.append(os.path.join(d, e))
    return out


def check(crate_dirs, base, out=sys.stdout):
    """Print every cycle; the number found."""
    total = 0
    for cdir in crate_dirs:
        for label, root in crate_roots(cdir):
            _, cycles = analyse(label, root)
            for c in cycles:
                print(format_cycle(label, c, base), file=out)
                total += 1
    return total


# ---------------------------------------------------------------------------------------------
# Self-test.


def write_tree(root, files):
    for rel, content in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(content)


def self_test():
    import io

    cargo = '[package]\nname = "%s"\nversion = "0.1.0"\n'
    clean = {
        "Cargo.toml": cargo % "clean",
        "src/lib.rs": "//! crate::b::x in a doc comment is no reference\n"
        "pub mod a;\npub mod b;\nmod c { pub fn f() {} }\n"
        "pub use faultline_other::model;\n",
        # a uses b; b names a only in comments and strings; children use their parent
        "src/a/mod.rs": "use crate::b::{self, Thing};\nuse crate::model::Step;\npub mod inner;\n"
        "pub fn f() -> b::Thing { crate::c::f(); inner::g(); Thing }\n",
        "src/a/inner.rs": "use super::*;\nuse super::super::b::Thing;\npub fn g() { super::f(); }\n"
        "#[cfg(test)]\nmod tests { use super::super::f; use crate::a::inner::g; }\n",
        "src/b.rs": '/* use crate::a; */\npub struct Thing;\nconst S: &str = "crate::a::f";\n'
        "const C: char = '\"'; // crate::a\n"
        "pub(in crate::b) fn h<'a>(x: &'a str) -> &'a str { x }\n"
        "macro_rules! m { () => { $crate::a::f() } }\n",
        "src/main.rs": "mod cli;\nfn main() { cli::run() }\n",
        "src/cli.rs": "pub fn run() { clean::a::f() }\n",
    }
    cyclic = {
        "Cargo.toml": cargo % "cyclic",
        "src/lib.rs": "pub mod apiserver;\npub mod crd;\npub mod runner;\npub mod report;\n"
        "pub mod leaf;\n",
        "src/apiserver.rs": "use crate::crd::validate;\npub fn serve() {}\n",
        "src/crd.rs": "pub fn validate() { crate::apiserver::serve() }\n",
        # runner -> report::console -> runner, across a level
        "src/runner/mod.rs": "pub mod step;\npub trait Progress {}\n",
        "src/runner/step.rs": "use crate::report::model::Result;\n",
        "src/report/mod.rs": "pub mod console;\npub mod model;\npub mod html;\n",
        "src/report/model.rs": "pub struct Result;\n",
        "src/report/console.rs": "use crate::runner::Progress;\nuse super::html;\n",
        # inside report: console <-> html
        "src/report/html.rs": "pub fn render() { super::console::x() }\n",
        "src/leaf.rs": "use crate::leaf_helpers;\n",
    }
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        c, k = os.path.join(tmp, "clean"), os.path.join(tmp, "cyclic")
        write_tree(c, clean)
        write_tree(k, cyclic)
        buf = io.StringIO()
        n = check([c], tmp, buf)
        if n:
            failures.append("clean tree: expected no cycle, got:\n" + buf.getvalue())
        crate, _ = analyse("clean", os.path.join(c, "src/lib.rs"))
        if ("a", "inner", "tests") not in crate.modules:
            failures.append("inline module a::inner::tests not found")
        if not any(s == ("a",) and d == ("b",) for s, d, _, _ in crate.refs):
            failures.append("the reference a -> b was not found")
        if not any(s == ("a",) and d == ("c",) for s, d, _, _ in crate.refs):
            failures.append("the reference a -> c (inline module) was not found")
        buf = io.StringIO()
        n = check([k], tmp, buf)
        text = buf.getvalue()
        want = [
            "cyclic: apiserver -> crd -> apiserver (cyclic/src/apiserver.rs:1 apiserver -> crd; "
            "cyclic/src/crd.rs:1 crd -> apiserver)",
            "cyclic: report -> runner -> report (cyclic/src/report/console.rs:1 "
            "report::console -> runner; cyclic/src/runner/step.rs:1 runner::step -> report::model)",
            "cyclic: report::console -> report::html -> report::console "
            "(cyclic/src/report/console.rs:2 report::console -> report::html; "
            "cyclic/src/report/html.rs:1 report::html -> report::console)",
        ]
        for w in want:
            if w not in text.splitlines():
                failures.append("cyclic tree: missing line\n  %s\nin:\n%s" % (w, text))
        if n != len(want):
            failures.append("cyclic tree: %d cycles, expected %d:\n%s" % (n, len(want), text))
    if failures:
        for f in failures:
            print("self-test FAILED: " + f, file=sys.stderr)
        return 1
    print("self-test passed")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("crates", nargs="*", help="crate directories (default: harness/* and fixtures/*)")
    ap.add_argument("--self-test", action="store_true", help="check the checker, then exit")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    dirs = args.crates or default_crate_dirs(repo)
    base = os.getcwd()
    n = check(dirs, base)
    if n:
        print("%d import cycle(s) between sibling modules" % n, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
