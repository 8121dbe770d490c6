"""Reading input files: what a path is, and text bounded in size and nesting.

Every TOML file (catalogue, network, workload) and JSON file (plan) hps reads comes through
`read_input_text`: the path must be a regular file (a directory, FIFO, device, socket or
symlink loop is named as what it is, not "no such file"), at most `limit_bytes` long, UTF-8,
and a leading byte-order mark is dropped (editors on Windows write one; the parsers refuse it).
`check_nesting` then bounds the depth of arrays and tables before the recursive parsers see the
text, so a file nested 100,000 deep is a ConfigError, not a RecursionError.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

from hps.config.limits import MAX_TOML_FILE_BYTES, MAX_TOML_FILE_DEPTH
from hps.errors import ConfigError

BYTE_ORDER_MARK = "\ufeff"

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def path_kind(path: str | os.PathLike[str]) -> str | None:
    """What `path` is, in words, when it is not a regular file (symlinks followed): "a
    directory", "a FIFO (named pipe)", "a character device", "a symlink loop", "a broken
    symlink", "missing"; None for a regular file."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symlink loop"
        if os.path.islink(path):
            return "a broken symlink"
        return "missing"
    if stat.S_ISREG(mode):
        return None
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def require_regular_file(path: str | os.PathLike[str], source: str, what: str) -> Path:
    """`path` as a Path when it is a regular file; ConfigError naming `source` saying what it is
    instead (`what` names the file wanted, e.g. "TOML file")."""
    kind = path_kind(path)
    if kind == "missing":
        raise ConfigError(source, "", "file not found")
    if kind is not None:
        raise ConfigError(source, "", f"not a regular file: {path} is {kind}; give a {what}")
    return Path(path)


def read_input_text(path: str | os.PathLike[str], source: str, *, limit_bytes: int, what: str) -> str:
    """The UTF-8 text of the regular file at `path`, at most `limit_bytes` long, without a
    leading byte-order mark. ConfigError naming `source` for anything else."""
    require_regular_file(path, source, what)
    limit = f"{limit_bytes:,}-byte ({limit_bytes / 2**20:g} MiB) limit"
    try:
        size = os.stat(path).st_size
        if size > limit_bytes:
            raise ConfigError(source, "", f"file of {size:,} bytes is over the {limit}")
        with open(path, "rb") as handle:
            raw = handle.read(limit_bytes + 1)
    except OSError as err:
        raise ConfigError(source, "", f"cannot be read: {err.strerror or err}") from None
    if len(raw) > limit_bytes:
        raise ConfigError(source, "", f"file is over the {limit}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(source, "", f"not valid {what}: not UTF-8 text ({err.reason})") from None
    return text.removeprefix(BYTE_ORDER_MARK)


_TOML_TOKENS = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'  # multi-line basic string
    r"|'''.*?'''"  # multi-line literal string
    r'|"(?:[^"\\\n]|\\.)*"'  # basic string
    r"|'[^'\n]*'"  # literal string
    r"|#[^\n]*"  # comment
    r"|[\[\]{}]",
    re.DOTALL,
)
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_TOKENS = {"toml": _TOML_TOKENS, "json": _JSON_TOKENS}


def nesting_depth(text: str, syntax: str) -> int:
    """The deepest nesting of brackets and braces in `text` outside strings and comments
    (syntax "toml" or "json"): one linear scan, no recursion. A TOML table header ``[[a]]``
    counts 2."""
    depth = deepest = 0
    for match in _TOKENS[syntax].finditer(text):
        token = match.group()
        if token == "[" or token == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif token == "]" or token == "}":
            depth = max(depth - 1, 0)
    return deepest


def check_nesting(text: str, source: str, limit: int, syntax: str) -> None:
    """ConfigError naming `source` when arrays and tables nest deeper than `limit`."""
    depth = nesting_depth(text, syntax)
    if depth > limit:
        what = "tables" if syntax == "toml" else "objects"
        raise ConfigError(source, "", f"nested deeper than {limit}: its arrays and {what} nest {depth:,} deep")


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse the TOML file at `path`: a regular file of at most MAX_TOML_FILE_BYTES, nested at
    most MAX_TOML_FILE_DEPTH deep (a leading byte-order mark is dropped); anything else, or
    malformed TOML, is a ConfigError naming the file (and a key given twice)."""
    source = str(path)
    text = read_input_text(path, source, limit_bytes=MAX_TOML_FILE_BYTES, what="TOML file")
    check_nesting(text, source, MAX_TOML_FILE_DEPTH, "toml")
    try:
        return tomllib.loads(text)
    except RecursionError:  # the scan above bounds the depth; this is a second line of defence
        raise ConfigError(source, "", f"nested deeper than {MAX_TOML_FILE_DEPTH}") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(source, "", f"not valid TOML: {_toml_problem(err, text)}") from None


_TOML_AT = re.compile(r"\(at line (\d+), column \d+\)")


def _toml_problem(error: tomllib.TOMLDecodeError, text: str) -> str:
    """tomllib's message, with the key named where it says a value is given twice ("Cannot
    overwrite a value" names neither the key nor its table)."""
    message = str(error)
    found = _TOML_AT.search(message)
    if not message.startswith("Cannot overwrite a value") or not found:
        return message
    lines = text.splitlines()
    number = int(found.group(1))
    if not 1 <= number <= len(lines):
        return message
    key = lines[number - 1].split("=", 1)[0].strip()
    headers = [line.split("#", 1)[0].strip() for line in lines[: number - 1] if line.lstrip().startswith("[")]
    table = f" in {headers[-1]}" if headers else ""
    return f"key {key!r}{table} is given twice (the second at line {number}); each key may appear once per table"
