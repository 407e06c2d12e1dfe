#!/usr/bin/env python3
"""Run every command shown in the documentation and compare its output with the page.

The convention (docs/development.md, "The docs check", says it for writers):

* A fenced block whose info string is ``console`` is an example.  Each line that starts with
  ``$ `` is a command; a command line that ends in a backslash continues on the next line.  The
  lines after a command, up to the next ``$ `` line or the end of the block, are its expected
  output: standard output and standard error together, as a terminal shows them.
* ``[..]`` inside an expected line matches any text on that line (timings, thread counts); a
  line that is exactly ``...`` matches any number of lines, none included (output cut short on
  the page).  Nothing else is masked: the simulator's figures are deterministic.
* A command that exits with a status other than 0 ends its output with ``[exit status N]``.
* An HTML comment on the line just before the fence is a directive for the block:
  ``<!-- docs-check: skip REASON -->`` shows the block without running it (the reason is printed
  by every run of the check, and should be said in the page's text too);
  ``<!-- docs-check: timeout=SECONDS -->`` raises the per-command limit (default 60 s).
* Each block runs in a fresh temporary folder holding links to the repository's ``models``,
  ``traces`` and ``tests`` folders and to the build folder as ``build`` (so ``traces/...`` and ``build/...``
  paths work, and the page's output files land nowhere), an empty ``plots`` folder, and
  ``shiftsim`` on PATH as the binary under test, SHIFTSIM_DATA set to the repository, and the
  commands of one block run in order in the same folder (a later one can read an earlier one's
  file).

It also checks that every relative link of the pages (``[text](path#anchor)``) names a file that
exists and, for a Markdown file, a heading that has that anchor (GitHub's rule: lower case,
punctuation dropped, spaces to hyphens).

A block of another kind preceded by ``<!-- docs-check: copy-of PATH -->`` must be a part of the
file PATH, word for word (a program shown in a page and built by the tests).

``--update`` rewrites the expected output of every block that differs, in place, keeping each
expected line that still matches (so masks survive) and replacing the rest with the new output.
Run it after a deliberate change of figures, then read the diff (``git diff -- README.md docs``).
A command that the page shows succeeding and that now fails is not rewritten (it is reported,
and the check exits 1) unless ``--allow-failures``.

SHIFTSIM_DOCS_CHECK=skip makes it exit 77 (meson's "skipped") without running anything: .ci/run
runs the check as a step of its own, so it skips the copies inside `meson test`.

Only Python 3's standard library is used: meson itself runs on Python 3, so it is present
wherever shiftsim builds.
"""

import argparse
import concurrent.futures
import difflib
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DIRECTIVE = re.compile(r"^<!--\s*docs-check:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
EXIT_LINE = re.compile(r"^\[exit status (\d+)\]$")
DEFAULT_TIMEOUT = 60


class Command:
    def __init__(self, text, first_line, expected, out_start, out_end):
        self.text = text            # the command, continuation lines joined with newlines
        self.first_line = first_line  # 1-based line number of its "$ " line
        self.expected = expected    # expected output lines
        self.out_start = out_start  # 0-based index of its first output line in the file
        self.out_end = out_end      # one past its last output line
        self.actual = None
        self.seconds = 0.0


class Block:
    def __init__(self, path, line, indent):
        self.path = path
        self.line = line            # 1-based line number of the opening fence
        self.indent = indent
        self.commands = []
        self.skip = None
        self.timeout = DEFAULT_TIMEOUT
        self.failures = []          # (command, diff text)
        self.error = None

    def where(self):
        return "%s:%d" % (os.path.relpath(self.path, ROOT), self.line)


def parse(path):
    """The console blocks of one Markdown file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3)
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if info != "console":
            i = end + 1
            continue
        block = Block(path, i + 1, indent)
        prev = lines[i - 1] if i > 0 else ""
        d = DIRECTIVE.match(prev.strip())
        if d:
            for word in [w.strip() for w in d.group(1).split(";")]:
                if word.startswith("skip"):
                    block.skip = word[4:].strip() or "(no reason given)"
                elif word.startswith("copy-of "):
                    pass
                elif word.startswith("timeout="):
                    block.timeout = int(word[len("timeout="):])
                else:
                    block.error = "unknown directive %r" % word
        body = [l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1:end]]
        j = 0
        while j < len(body):
            if not body[j].startswith("$ "):
                if body[j].strip():
                    block.error = "line %d: output before any command" % (i + 2 + j)
                j += 1
                continue
            first = j
            text = body[j][2:]
            while text.endswith("\\") and j + 1 < len(body):
                j += 1
                text += "\n" + body[j]
            j += 1
            start = j
            while j < len(body) and not body[j].startswith("$ "):
                j += 1
            expected = body[start:j]
            # Blank lines at the end of an output are not part of it: they separate it from the
            # next command or end the block (a program's own trailing blank lines are dropped
            # from its actual output too).
            while expected and not expected[-1].strip():
                expected.pop()
            block.commands.append(Command(text, i + 2 + first, expected, i + 1 + start,
                                          i + 1 + start + len(expected)))
        if not block.commands:
            block.error = "a console block with no command"
        blocks.append(block)
        i = end + 1
    return blocks


def line_matches(pattern, line):
    if "[..]" not in pattern:
        return pattern == line
    parts = [re.escape(p) for p in pattern.split("[..]")]
    return re.fullmatch(".*".join(parts), line) is not None


ELIDED = 1e-6  # the cost of a line absorbed by "...": tiny, so that a changed line is replaced
GAP = 1.1      # an expected line dropped, or an actual line added: dearer than a replacement


def keep_elided_tail(pattern, line):
    """`line`, re-elided where `pattern` ends in "[..]" (a timing) and the few characters before
    it are still in `line`: a changed figure earlier on the line is updated, the tail stays out."""
    if not pattern.endswith("[..]") or pattern.count("[..]") != 1:
        return line
    anchor = pattern[:-len("[..]")][-12:]
    at = line.rfind(anchor) if anchor else -1
    return line[:at + len(anchor)] + "[..]" if at >= 0 else line


def align(expected, actual):
    """The cheapest alignment of expected lines (with masks) to actual lines.

    Returns (cost, steps): a cost below 1 means the output matches; steps is a list of
    ("keep", pattern), ("new", actual line), ("drop", pattern), ("replace", actual line) and
    ("more", "...") from which --update writes the new expected output.  A line that changed is
    a replacement in place (cost 1) rather than a line dropped beside one that a "..." absorbs,
    so --update keeps the lines a page chose to show.
    """
    n, m = len(expected), len(actual)
    inf = float("inf")

    @functools.lru_cache(maxsize=None)
    def change(i, j):
        """0 when expected line i matches actual line j, else 1 plus a little for how unlike they
        are, so that a changed line is paired with the actual line most like it."""
        if line_matches(expected[i], actual[j]):
            return 0
        return 1 + 0.01 * (1 - difflib.SequenceMatcher(None, expected[i], actual[j]).ratio())

    cost = [[inf] * (m + 1) for _ in range(n + 1)]
    cost[n][m] = 0
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if i == n and j == m:
                continue
            best = inf
            if i < n and expected[i] == "...":
                best = min(best, cost[i + 1][j])
                if j < m:
                    best = min(best, cost[i][j + 1] + ELIDED)
            else:
                if i < n and j < m:
                    best = min(best, cost[i + 1][j + 1] + change(i, j))
                if i < n:
                    best = min(best, cost[i + 1][j] + GAP)
                if j < m:
                    best = min(best, cost[i][j + 1] + GAP)
            cost[i][j] = best
    steps = []
    i = j = 0
    close = lambda a, b: abs(a - b) < ELIDED / 2
    while i < n or j < m:
        if i < n and expected[i] == "...":
            if j < m and close(cost[i][j], cost[i][j + 1] + ELIDED):
                j += 1
                continue
            steps.append(("more", "..."))
            i += 1
            continue
        if i < n and j < m and line_matches(expected[i], actual[j]) and \
                close(cost[i][j], cost[i + 1][j + 1]):
            steps.append(("keep", expected[i]))
            i += 1
            j += 1
        elif i < n and j < m and close(cost[i][j], cost[i + 1][j + 1] + change(i, j)):
            steps.append(("drop", expected[i]))
            steps.append(("replace", keep_elided_tail(expected[i], actual[j])))
            i += 1
            j += 1
        elif j < m and close(cost[i][j], cost[i][j + 1] + GAP):
            steps.append(("new", actual[j]))
            j += 1
        else:
            steps.append(("drop", expected[i]))
            i += 1
    return cost[0][0], steps


def wrapper_dir(shiftsim, work):
    """A folder with a `shiftsim` that runs the binary under test, stdout line-buffered so that
    its lines and stderr's interleave as on a terminal."""
    bindir = os.path.join(work, "bin")
    os.mkdir(bindir)
    stdbuf = shutil.which("stdbuf")
    for name, target in (("shiftsim", shiftsim),
                         ("shiftsim-bench", os.path.join(os.path.dirname(shiftsim),
                                                         "src", "microbench", "shiftsim-bench"))):
        if not os.path.exists(target):
            continue
        with open(os.path.join(bindir, name), "w") as f:
            if stdbuf:
                f.write('#!/bin/sh\nexec %s -oL %s "$@"\n' % (stdbuf, target))
            else:
                f.write('#!/bin/sh\nexec %s "$@"\n' % target)
        os.chmod(os.path.join(bindir, name), 0o755)
    return bindir


def run_block(block, shiftsim, work):
    folder = tempfile.mkdtemp(prefix="block-", dir=work)
    for name in ("models", "traces", "tests"):
        os.symlink(os.path.join(ROOT, name), os.path.join(folder, name))
    os.mkdir(os.path.join(folder, "plots"))
    # `build/...` names the build the binary under test comes from (build/tests/embed).
    os.symlink(os.path.dirname(shiftsim), os.path.join(folder, "build"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHIFTSIM_", "SSIM_"))}
    env.update({"PATH": os.path.join(work, "bin") + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
                "SHIFTSIM_DATA": ROOT, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC",
                "COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"})
    for cmd in block.commands:
        started = time.monotonic()
        try:
            proc = subprocess.run(["bash", "-c", cmd.text], cwd=folder, env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=block.timeout)
            out = proc.stdout.decode("utf-8", errors="replace")
            status = proc.returncode
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode("utf-8", errors="replace")
            out += "\n[docs check: timed out after %d s]" % block.timeout
            status = 124
        cmd.seconds = time.monotonic() - started
        lines = out.split("\n")
        # Strip trailing spaces, which Markdown editors remove from the page anyway.
        lines = [l.rstrip() for l in lines]
        # Trailing blank lines are dropped too: a page cannot show them at the end of a block.
        while lines and not lines[-1]:
            lines.pop()
        if status != 0:
            lines.append("[exit status %d]" % status)
        cmd.actual = lines
        cost, _ = align(cmd.expected, lines)
        if cost >= 0.5:
            block.failures.append(cmd)
    shutil.rmtree(folder, ignore_errors=True)
    return block


def show_diff(cmd):
    _, steps = align(cmd.expected, cmd.actual)
    out = []
    for kind, text in steps:
        mark = {"keep": " ", "more": " ", "new": "+", "replace": "+", "drop": "-"}[kind]
        out.append("    %s %s" % (mark, text))
    return "\n".join(out)


def newly_failing(cmd):
    """A command the page shows succeeding that now exits with an error: --update leaves it (a
    regression, or a feature not merged yet, is not documentation) unless --allow-failures."""
    was = any(EXIT_LINE.match(l) for l in cmd.expected)
    return not was and bool(cmd.actual) and EXIT_LINE.match(cmd.actual[-1]) is not None


def update(path, blocks, allow_failures):
    """Rewrite each failing command's expected output in the file, bottom to top."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    cmds = [(b, c) for b in blocks for c in b.failures if allow_failures or not newly_failing(c)]
    for block, cmd in sorted(cmds, key=lambda bc: -bc[1].out_start):
        _, steps = align(cmd.expected, cmd.actual)
        new = [text for kind, text in steps if kind != "drop"]
        lines[cmd.out_start:cmd.out_end] = [block.indent + l if l else l for l in new]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def default_files():
    files = [os.path.join(ROOT, "README.md")]
    for base, _, names in sorted(os.walk(os.path.join(ROOT, "docs"))):
        files += [os.path.join(base, n) for n in sorted(names) if n.endswith(".md")]
    return files


def unchecked(files):
    """Commands shown in fenced blocks that are not console blocks, so never run."""
    found = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        fence = None
        for n, line in enumerate(lines, 1):
            m = FENCE.match(line)
            if fence is None and m:
                fence = (m.group(2), m.group(3))
                continue
            if fence is not None and line.strip().startswith(fence[0]):
                fence = None
                continue
            if fence is not None and fence[1] != "console" and line.startswith("$ "):
                found.append("%s:%d: %s" % (os.path.relpath(path, ROOT), n, line[:90]))
    return found


LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    found = set()
    with open(path, encoding="utf-8") as f:
        fence = None
        for line in f:
            m = FENCE.match(line)
            if m and fence is None:
                fence = m.group(2)
            elif fence is not None and line.strip().startswith(fence):
                fence = None
            elif fence is None and line.startswith("#"):
                base = slug(line.lstrip("#"))
                n = 1
                name = base
                while name in found:
                    name = "%s-%d" % (base, n)
                    n += 1
                found.add(name)
    return found


def broken_links(files):
    """Relative links (and their #anchors) that point nowhere."""
    broken = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        fence = None
        for n, line in enumerate(text.split("\n"), 1):
            m = FENCE.match(line)
            if m and fence is None:
                fence = m.group(2)
                continue
            if fence is not None:
                if line.strip().startswith(fence):
                    fence = None
                continue
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"^[a-z]+:", target):
                    continue
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else path
                where = "%s:%d: %s" % (os.path.relpath(path, ROOT), n, target)
                if not os.path.exists(dest):
                    broken.append(where + " (no such file)")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    broken.append(where + " (no such heading)")
    return broken


def self_test():
    """The parser, the masks and --update's alignment on small cases with known answers."""
    import textwrap
    page = textwrap.dedent("""\
        Text.

        <!-- docs-check: timeout=5 -->
        ```console
        $ echo a \\
            b
        a b

        $ false
        [exit status 1]
        ```

        ```sh
        $ not run
        ```

        <!-- docs-check: skip it needs a GPU -->
        ```console
        $ nvidia-smi
        ```
        """)
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write(page)
    try:
        blocks = parse(f.name)
        shown = unchecked([f.name])
    finally:
        os.unlink(f.name)
    assert len(blocks) == 2, blocks
    b = blocks[0]
    assert b.timeout == 5 and b.skip is None and not b.error
    assert [c.text for c in b.commands] == ["echo a \\\n    b", "false"], [c.text for c in b.commands]
    assert b.commands[0].expected == ["a b"] and b.commands[1].expected == ["[exit status 1]"]
    assert blocks[1].skip == "it needs a GPU"
    assert len(shown) == 1 and shown[0].endswith("$ not run"), shown

    def new(expected, actual):
        cost, steps = align(expected, actual)
        return cost < 0.5, [t for k, t in steps if k != "drop"]
    assert line_matches("in [..] s", "in 0.43 s") and not line_matches("in [..] s", "in 1 ms")
    assert new(["a", "...", "z"], ["a", "b", "c", "z"]) == (True, ["a", "...", "z"])
    assert new(["...", "z"], ["z"]) == (True, ["...", "z"])
    # A changed line inside elided output is replaced in place, not absorbed by the "...".
    assert new(["h", "...", "  MAPE 18.65", "...", "x"], ["h", "a", "  MAPE 19.00", "c", "x"]) \
        == (False, ["h", "...", "  MAPE 19.00", "...", "x"])
    assert new(["t [..]", "y"], ["t 3 s", "y", "z"]) == (False, ["t [..]", "y", "z"])
    # A line whose figure changed keeps its elided timing.
    assert new(["fit 9 iterations (converged), [..]"], ["fit 8 iterations (converged), 0.2 s"]) \
        == (False, ["fit 8 iterations (converged), [..]"])
    assert new(["x = 1, took [..]"], ["y = 2"]) == (False, ["y = 2"])
    assert new(["a", "b", "c"], ["a", "c"]) == (False, ["a", "c"])
    assert new([], ["q"]) == (False, ["q"])
    assert slug("Sweep and compare: which split of 32 GPUs, and what does commshift buy?") == \
        "sweep-and-compare-which-split-of-32-gpus-and-what-does-commshift-buy"
    assert slug("Format (`# shiftsim-runs v2`)") == "format--shiftsim-runs-v2"
    print("docs check: self-test passed")
    return 0


def stale_copies(files):
    """Blocks marked <!-- docs-check: copy-of PATH --> whose text is not a part of PATH."""
    stale = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for i, line in enumerate(lines):
            d = DIRECTIVE.match(line.strip())
            if not d or not d.group(1).startswith("copy-of "):
                continue
            source = os.path.join(ROOT, d.group(1)[len("copy-of "):].strip())
            m = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
            end = i + 2
            while m and end < len(lines) and not lines[end].strip().startswith(m.group(2)):
                end += 1
            where = "%s:%d" % (os.path.relpath(path, ROOT), i + 2)
            if not m or not os.path.exists(source):
                stale.append(where + ": no block after the directive, or no file " + source)
                continue
            with open(source, encoding="utf-8") as f:
                if "\n".join(lines[i + 2:end]) not in f.read():
                    stale.append(where + ": not a copy of " + os.path.relpath(source, ROOT))
    return stale


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", help="Markdown files (default README.md and docs/**/*.md)")
    ap.add_argument("--shiftsim", default=os.path.join(ROOT, "build", "shiftsim"),
                    help="the binary under test (default build/shiftsim)")
    ap.add_argument("--update", action="store_true",
                    help="rewrite the expected outputs that differ, in place")
    ap.add_argument("--allow-failures", action="store_true",
                    help="with --update, also write outputs of commands that used to succeed and "
                         "now fail")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="blocks run at once (default 2)")
    ap.add_argument("-k", "--filter", default="",
                    help="only blocks whose file:line or commands contain this text")
    ap.add_argument("--strict", action="store_true",
                    help="also fail when a `$ ` command is shown outside a console block")
    ap.add_argument("--list", action="store_true",
                    help="list the blocks and the unexecuted commands, run nothing")
    ap.add_argument("--self-test", action="store_true",
                    help="check the checker itself on small cases, run nothing else")
    args = ap.parse_args()
    if args.self_test:
        return self_test()

    if os.environ.get("SHIFTSIM_DOCS_CHECK") == "skip":
        # .ci/run runs the check as a step of its own and skips it inside `meson test`.
        print("docs check: skipped (SHIFTSIM_DOCS_CHECK=skip)")
        return 77
    files = [os.path.abspath(f) for f in args.files] or default_files()
    blocks = [b for f in files for b in parse(f)]
    if args.filter:
        blocks = [b for b in blocks
                  if args.filter in b.where() or any(args.filter in c.text for c in b.commands)]
    if args.list:
        for b in blocks:
            state = "skip: " + b.skip if b.skip else "run"
            print("%-28s %-5s %s" % (b.where(), state, b.commands[0].text.split("\n")[0]
                                     if b.commands else ""))
        for u in unchecked(files):
            print("not in a console block: " + u)
        return 0
    shiftsim = os.path.abspath(args.shiftsim)
    if not os.access(shiftsim, os.X_OK):
        print("docs check: %s is not an executable (build first, or give --shiftsim)" % shiftsim,
              file=sys.stderr)
        return 2

    links = broken_links(files)
    for l in links:
        print("FAIL link " + l)
    copies = stale_copies(files)
    for c in copies:
        print("FAIL copy " + c)
    links += copies
    bad = [b for b in blocks if b.error]
    for b in bad:
        print("FAIL %s: %s" % (b.where(), b.error))
    runnable = [b for b in blocks if not b.error and not b.skip]
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="shiftsim-docs-")
    try:
        wrapper_dir(shiftsim, work)
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            done = list(pool.map(lambda b: run_block(b, shiftsim, work), runnable))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    failed = 0
    for b in done:
        seconds = sum(c.seconds for c in b.commands)
        if b.failures:
            failed += 1
            kept = [c for c in b.failures if newly_failing(c) and not args.allow_failures]
            verb = "UPDATED" if args.update and not kept else "FAIL"
            if args.update:
                for c in kept:
                    print("NOT UPDATED %s: `%s` now fails (%s); fix it, or --allow-failures"
                          % (b.where(), c.text.split("\n")[0], c.actual[-1]))
            print("%s %s (%.1f s)" % (verb, b.where(), seconds))
            if not args.update or kept:
                for c in (kept if args.update else b.failures):
                    print("  $ %s\n  expected (-) against actual (+):\n%s"
                          % (c.text, show_diff(c)))
        else:
            print("ok   %s (%.1f s)" % (b.where(), seconds))
    for b in blocks:
        if b.skip and not b.error:
            print("skip %s: %s" % (b.where(), b.skip))
    if args.update:
        for path in files:
            touched = [b for b in done if b.path == path and b.failures]
            if touched:
                update(path, touched, args.allow_failures)
    n_cmds = sum(len(b.commands) for b in runnable)
    kept = sum(1 for b in done if any(newly_failing(c) for c in b.failures)) \
        if args.update and not args.allow_failures else 0
    outcome = ("%d blocks updated, %d not" % (failed - kept, kept)) if args.update \
        else "%d blocks failed" % failed
    print("docs check: %d commands in %d blocks run in %.0f s: %s, %d skipped, %d malformed; "
          "%d broken links or copies" % (n_cmds, len(runnable), time.monotonic() - started,
                                         outcome, sum(1 for b in blocks if b.skip), len(bad),
                                         len(links)))
    shown = unchecked(files)
    if shown:
        print("docs check: %d more commands are shown outside console blocks and not run "
              "(--list names them)" % len(shown))
    if args.strict and shown:
        return 1
    not_updated = args.update and not args.allow_failures and any(
        newly_failing(c) for b in done for c in b.failures)
    return 1 if bad or links or not_updated or (failed and not args.update) else 0


if __name__ == "__main__":
    sys.exit(main())
