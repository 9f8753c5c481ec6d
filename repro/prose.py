"""The page's prose: ``repro/prose.md``, one ``## <key>`` entry per paragraph.

Every ``## <key>`` heading starts an entry that runs to the next heading;
its lines are joined into paragraphs (blank lines separate paragraphs).
Text above the first heading describes the file and is not used.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["Prose", "parse_prose", "PROSE_FILE"]

#: the prose file read by default
PROSE_FILE = Path(__file__).with_name("prose.md")


def parse_prose(text):
    """``{key: text}`` of the ``## <key>`` entries of ``text``, in file order.

    Raises
    ------
    ValueError
        A key given twice, or a heading without a key.
    """
    entries, key, lines = {}, None, []

    def close():
        if key is not None:
            paras = "\n".join(lines).strip().split("\n\n")
            entries[key] = "\n\n".join(" ".join(p.split()) for p in paras if p.strip())

    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            close()
            key, lines = line[3:].strip(), []
            if not key or " " in key:
                raise ValueError(f"prose line {n}: {line!r} is not '## <key>' (one word); "
                                 "write the key without spaces")
            if key in entries:
                raise ValueError(f"prose line {n}: key {key!r} is given twice; keep one")
        elif key is not None:
            lines.append(line)
    close()
    return entries


class Prose:
    """The entries of a prose file.

    Parameters
    ----------
    path : path, optional
        The prose file (default :data:`PROSE_FILE`).
    """

    def __init__(self, path=None):
        self.path = Path(path) if path is not None else PROSE_FILE
        self.entries = parse_prose(self.path.read_text(encoding="utf-8"))

    def __getitem__(self, key):
        try:
            return self.entries[key]
        except KeyError:
            raise KeyError(f"the prose file {str(self.path)!r} has no entry {key!r}; add a "
                           f"'## {key}' section") from None

    def get(self, key, default=None):
        """The entry ``key``, or ``default`` when there is none."""
        return self.entries.get(key, default)

    def with_prefix(self, prefix):
        """``[(key, text)]`` of the entries whose key starts with ``prefix``, in file order."""
        return [(k, v) for k, v in self.entries.items() if k.startswith(prefix)]
