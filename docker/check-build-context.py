#!/usr/bin/env python3
"""Reproduce the container image's build stage without a container engine.

    python3 docker/check-build-context.py [--config release|debug] [--out DIR] [--keep] [--self-test]
    python3 docker/check-build-context.py --print-stage NAME|INDEX     (for docker/container-check.sh)

1. The build context: copies into a scratch directory (mktemp) exactly the files that
   docker/Dockerfile.dockerignore admits (moby's rules: `*`, `?`, `[...]`, `**`, `!`
   exceptions, the last matching line wins, a pattern that matches a directory matches
   everything under it).
2. The build stage (`FROM ... AS build` up to the next `FROM`), instruction by instruction:
   WORKDIR makes the directory under the scratch root; COPY copies from the context (a
   missing source fails, as `docker build` does); ARG/ENV set variables; RUN commands that
   install Debian packages (`apt-get ...`) are not run: the host stands in for the build
   image, and each package they name must be installed here; every other RUN runs with
   `sh -c` in the WORKDIR, in the order the Dockerfile gives (so `swift package resolve`
   sees only what was copied before it). Any other instruction stops the check.
   The RUN commands must write inside the WORKDIR (they run on this machine).
3. With --out DIR: copies the file the runtime stage takes with `COPY --from=build SRC` to
   DIR/<basename>.

--config release (the default, what `make test` runs) runs the RUN lines exactly as the
Dockerfile writes them: the release build from scratch took about 65 s on this 2-core machine
(measured), so `make test` can afford the real command rather than an approximation.
--config debug replaces `-c release` with `-c debug` (about 35 s): the same manifest, the same
dependency resolution, every module of the product compiled and linked against the static
Swift runtime, so it fails the same way for what this check is for, a build context that lacks
a file the build needs (issue #11 item 4: the dockerignore admitted Package.swift and Sources/
only, and the manifest's test targets need Tests/); only optimiser-only failures differ.

Dependencies resolve as they do for any checkout on this machine (SwiftPM's cache and git's
URL rewriting to the local package mirror); nothing here reaches the network.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCKERFILE = os.path.join(ROOT, "docker", "Dockerfile")
IGNOREFILE = os.path.join(ROOT, "docker", "Dockerfile.dockerignore")


def fail(message):
    print(f"check-build-context: {message}", file=sys.stderr)
    sys.exit(1)


def log(message):
    print(f"check-build-context: {message}", flush=True)


# ---- .dockerignore ----

def pattern_regex(pattern):
    """moby/patternmatcher's translation of one cleaned pattern to an anchored regex."""
    out, i, n = "^", 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if i + 1 < n and pattern[i + 1] == "*":
                i += 1
                if i + 1 < n and pattern[i + 1] == "/":
                    i += 1
                    out += "(.*/)?"   # `**/`: zero or more directories
                else:
                    out += ".*"
            else:
                out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j < 0:
                fail(f"{IGNOREFILE}: unterminated [ in pattern {pattern!r}")
            out += pattern[i:j + 1]
            i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out += re.escape(pattern[i])
        else:
            out += re.escape(c)
        i += 1
    return re.compile(out + "$")


def read_ignore(path):
    rules = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            if raw.startswith("#"):  # a comment only in the first column, as in moby's ignorefile
                continue
            line = raw.strip()
            if not line:
                continue
            exception = line.startswith("!")
            if exception:
                line = line[1:].strip()
            line = os.path.normpath(line).lstrip("/")
            if line in ("", "."):
                continue
            rules.append((exception, line, pattern_regex(line)))
    return rules


def excluded(rules, rel):
    """True if the last rule matching `rel` or one of its parent directories excludes it."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
    result = False
    for exception, _, regex in rules:
        if any(regex.match(p) for p in prefixes):
            result = not exception
    return result


def may_admit_below(rules, rel_dir):
    """Could an exception rule admit something under the excluded directory `rel_dir`?"""
    for exception, pattern, _ in rules:
        if not exception:
            continue
        literal = re.split(r"[*?\[\\]", pattern, maxsplit=1)[0]
        if literal.startswith(rel_dir + "/") or (rel_dir + "/").startswith(literal):
            return True
    return False


def copy_context(dest, root=ROOT, ignorefile=IGNOREFILE):
    """Copies what the dockerignore admits from root to dest; returns the admitted file list."""
    rules = read_ignore(ignorefile)
    admitted = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if os.path.islink(os.path.join(dirpath, d)):
                filenames.append(d)
            elif not excluded(rules, rel) or may_admit_below(rules, rel):
                keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if excluded(rules, rel):
                continue
            target = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(os.path.join(root, rel), target, follow_symlinks=False)
            admitted.append(rel)
    return admitted


# Docker's documented .dockerignore behaviour, checked on a scratch tree before the build
# (`--self-test`), so a matcher that admits too much or too little cannot pass unnoticed.
SELF_TEST_TREE = ["Package.swift", "README.md", "docs/x.md", "Sources/A/a.swift", "Sources/A/a.tmp",
                  "Tests/T/t.swift", ".build/debug/bin", ".build/other", ".git/HEAD"]
SELF_TEST_CASES = [
    ("*\n!Package.swift\n!Sources/\n", {"Package.swift", "Sources/A/a.swift", "Sources/A/a.tmp"}),
    ("*\n!Sources/\nSources/**/*.tmp\n", {"Sources/A/a.swift"}),
    ("**/*.md\n", set(SELF_TEST_TREE) - {"README.md", "docs/x.md"}),
    ("*.md\n", set(SELF_TEST_TREE) - {"README.md"}),
    (".build\n!.build/debug/bin\n", set(SELF_TEST_TREE) - {".build/other"}),
    ("Sources/?/a.swift\n.gi[s-u]\n", set(SELF_TEST_TREE) - {"Sources/A/a.swift", ".git/HEAD"}),
    ("# a comment\n\n/Tests\n  README.md  \n", set(SELF_TEST_TREE) - {"Tests/T/t.swift", "README.md"}),
]


def self_test():
    with tempfile.TemporaryDirectory(prefix="airlock-dockerignore-test.") as scratch:
        tree = os.path.join(scratch, "tree")
        for rel in SELF_TEST_TREE:
            os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
            with open(os.path.join(tree, rel), "w") as f:
                f.write(rel)
        for index, (ignore, expected) in enumerate(SELF_TEST_CASES):
            ignorefile = os.path.join(scratch, f"ignore{index}")
            with open(ignorefile, "w") as f:
                f.write(ignore)
            dest = os.path.join(scratch, f"context{index}")
            admitted = set(copy_context(dest, root=tree, ignorefile=ignorefile))
            copied = {os.path.relpath(os.path.join(d, n), dest) for d, _, names in os.walk(dest) for n in names}
            if admitted != expected or copied != expected:
                fail(f"self-test: dockerignore {ignore!r} admitted {sorted(copied)}, expected {sorted(expected)}")
    log(f"self-test: {len(SELF_TEST_CASES)} dockerignore cases match Docker's rules")


# ---- Dockerfile ----

def instructions(path):
    """(keyword, arguments) pairs, with continuation lines joined and comment lines dropped."""
    result, current = [], ""
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.lstrip().startswith("#"):
                continue
            if line.rstrip().endswith("\\"):
                current += line.rstrip()[:-1] + " "
                continue
            current += line
            if current.strip():
                keyword, _, rest = current.strip().partition(" ")
                result.append((keyword.upper(), rest.strip()))
            current = ""
    if current.strip():
        fail(f"{path}: the last instruction ends in a line continuation")
    return result


def stages(path):
    """[(name or None, [instructions after FROM])], with each stage's FROM as its first entry."""
    out = []
    for keyword, rest in instructions(path):
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            out.append((name, [(keyword, rest)]))
        elif out:
            out[-1][1].append((keyword, rest))
    return out


def global_args(path):
    """The defaults of the ARG lines before the first FROM (they may be used in FROM lines)."""
    variables = {}
    for keyword, rest in instructions(path):
        if keyword == "FROM":
            break
        if keyword == "ARG":
            for assignment in shlex.split(rest):
                key, _, value = assignment.partition("=")
                variables[key] = value
    return variables


def stage(path, which):
    all_stages = stages(path)
    for index, (name, body) in enumerate(all_stages):
        if name == which or str(index) == which:
            return body
    fail(f"{path}: no stage {which!r} (stages: {[n or i for i, (n, _) in enumerate(all_stages)]})")


def expand(text, variables):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), text)


def apt_packages(command):
    """The package names after each `apt-get install` in a shell command."""
    names = []
    for part in re.split(r"&&|;|\|\|", command):
        words = shlex.split(part)
        if "apt-get" in words and "install" in words:
            names += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return names


def missing_packages(names):
    missing = []
    for name in names:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            missing.append(name)
    return missing


def copy_into(src, dest):
    if os.path.isdir(src):
        shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)
    else:
        if dest.endswith("/") or os.path.isdir(dest):
            dest = os.path.join(dest, os.path.basename(src))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(src, dest, follow_symlinks=False)


def run_build_stage(scratch, config):
    context = os.path.join(scratch, "context")
    root = os.path.join(scratch, "root")
    os.makedirs(context)
    os.makedirs(root)
    os.makedirs(os.path.join(scratch, "tmp"))
    admitted = copy_context(context)
    top = sorted({rel.split("/")[0] for rel in admitted})
    log(f"context: {len(admitted)} files admitted by {os.path.relpath(IGNOREFILE, ROOT)}: {' '.join(top)}")

    workdir = root
    variables = {}
    globals_ = global_args(DOCKERFILE)
    for keyword, rest in stage(DOCKERFILE, "build"):
        rest = expand(rest, globals_ if keyword == "FROM" else variables)
        if keyword == "FROM":
            log(f"FROM {rest} (this machine stands in for the build image)")
        elif keyword in ("ARG", "ENV"):
            for assignment in shlex.split(rest):
                key, eq, value = assignment.partition("=")
                # `ARG NAME` in a stage takes the global default, as Docker does.
                variables[key] = value if eq or keyword == "ENV" else globals_.get(key, "")
        elif keyword == "WORKDIR":
            workdir = os.path.join(root, rest.lstrip("/")) if rest.startswith("/") else os.path.join(workdir, rest)
            os.makedirs(workdir, exist_ok=True)
        elif keyword == "COPY":
            words = shlex.split(rest)
            if any(w.startswith("--") for w in words):
                fail(f"COPY {rest}: flags are not supported by this check")
            *sources, dest = words
            dest_path = os.path.join(root, dest.lstrip("/")) if dest.startswith("/") else os.path.join(workdir, dest)
            if dest.endswith("/"):
                dest_path += "/"
            for source in sources:
                src = os.path.join(context, source)
                if not os.path.lexists(src):
                    fail(f"COPY {rest}: {source!r} is not in the build context "
                         f"({os.path.relpath(IGNOREFILE, ROOT)} does not admit it)")
                copy_into(src, dest_path)
            log(f"COPY {rest}")
        elif keyword == "RUN":
            if re.match(r"\s*apt-get\b", rest):
                names = apt_packages(rest)
                missing = missing_packages(names)
                if missing:
                    fail(f"RUN apt-get: these build-stage packages are not installed here: {' '.join(missing)} "
                         f"(apt-get install {' '.join(missing)})")
                log(f"RUN apt-get ... (not run; installed here: {' '.join(names)})")
                continue
            command = rest if config == "release" else rest.replace("-c release", f"-c {config}")
            log(f"RUN {command}")
            # SwiftPM leaves lock files in TMPDIR named after the package path: keep them in the scratch dir.
            env = dict(os.environ, **variables, TMPDIR=os.path.join(scratch, "tmp"))
            r = subprocess.run(["sh", "-c", command], cwd=workdir, env=env)
            if r.returncode != 0:
                fail(f"the build stage's RUN failed (exit {r.returncode}) in a context of exactly what "
                     f"{os.path.relpath(IGNOREFILE, ROOT)} admits: {command}")
        else:
            fail(f"build stage: {keyword} is not supported by this check; teach docker/check-build-context.py")
    return root


def artifact(root):
    """The path, under the scratch root, of what the runtime stage copies from the build stage."""
    for _, body in stages(DOCKERFILE):
        for keyword, rest in body:
            words = shlex.split(rest)
            if keyword == "COPY" and "--from=build" in words:
                source = [w for w in words if not w.startswith("--")][0]
                return os.path.join(root, source.lstrip("/"))
    fail(f"{DOCKERFILE}: no COPY --from=build")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=["debug", "release"], default="release")
    parser.add_argument("--out", help="copy the runtime stage's COPY --from=build file into this directory")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--self-test", action="store_true",
                        help="check the dockerignore matcher on a scratch tree first (make test does)")
    parser.add_argument("--print-stage", metavar="NAME|INDEX",
                        help="print a stage's instructions, one 'KEYWORD<tab>arguments' line each, and exit")
    args = parser.parse_args()

    if args.print_stage is not None:
        for keyword, rest in stage(DOCKERFILE, args.print_stage):
            print(f"{keyword}\t{rest}")
        return

    if args.self_test:
        self_test()
    scratch = tempfile.mkdtemp(prefix="airlock-build-context.")
    try:
        root = run_build_stage(scratch, args.config)
        if args.out:
            built = artifact(root)
            if not os.path.isfile(built):
                fail(f"the build stage did not produce {os.path.relpath(built, root)}")
            os.makedirs(args.out, exist_ok=True)
            shutil.copy2(built, args.out)
            log(f"copied /{os.path.relpath(built, root)} ({os.path.getsize(built)} bytes) to {args.out}")
        log(f"ok: the build stage builds from the dockerignore'd context ({args.config})")
    finally:
        if args.keep:
            log(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
