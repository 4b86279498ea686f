"""What the dev patch scripts (kernels/dev/*_patch.py) share: they edit a COPY of a kernel file,
each edit replacing a text that must occur exactly once, so that a script run against a file
that has moved on stops instead of patching the wrong place."""
import sys


def patch_file(path, edits):
    """Applies (old, new) pairs to the file at `path` in order, each to the text the previous
    ones left, and writes it back. Exit status 1, naming the file and the text, if an `old`
    does not occur exactly once."""
    s = open(path).read()
    for old, new in edits:
        if s.count(old) != 1:
            sys.exit(f"{path}: expected one {old[:60]!r}, found {s.count(old)}")
        s = s.replace(old, new)
    open(path, "w").write(s)
