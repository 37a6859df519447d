"""Reading just enough C++ to split a binding in two translation units (build/layout.py):
the declarations of the exported functions, the headers a source includes, whether it
holds any code at all.

Not a C++ parser: comments, string and character literals and preprocessor lines are
blanked first (newlines kept), then only the top level (outside every brace) is read. Any
doubt — a raw string, a function inside a namespace, `static`/`inline`/`template`, two
different signatures of one name, the user's own PYBIND11_MODULE — answers None, and the
build keeps load_inline's single translation unit, which compiles anything it did before.
A declaration read wrongly costs one failed compile of gpubench's module file, after which
the build falls back the same way (build/compile.py): never a wrong binary.
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.MULTILINE)
# Words that make a top-level function unusable from another translation unit, or that
# this reader does not follow (templates, macros that expand to linkage specs).
_REFUSED_WORDS = frozenset({"static", "inline", "template", "constexpr", "consteval",
                            "typedef", "using", "extern", "operator", "return", "friend",
                            "virtual", "namespace", "class", "struct", "enum", "union"})


def included_headers(text: str) -> list[str]:
    """The names in this source's #include lines, in order (comments are not blanked: a
    commented-out include is still a hint of what the code needs, and costs nothing)."""
    return _INCLUDE.findall(text)


def blank_noncode(text: str) -> str | None:
    """`text` with comments, string/char literals and preprocessor lines replaced by
    spaces, newlines kept (so positions stay put). None for what this reader does not
    follow: a raw string literal, or an unterminated comment or literal."""
    return _blanked(text, comments_only=False)


def blank_comments(text: str) -> str | None:
    """`text` with each comment replaced by one space and its newlines: two sources equal
    here compile to the same binary, line numbers (-lineinfo, __LINE__) included, since
    C++ drops comments before the preprocessor runs. The build's content key hashes this
    (build/key.py): an edit of a comment that adds no line is a cached build. None when in
    doubt (a raw string; a digit separator read as a character literal), and the key then
    hashes the text as it is."""
    return _blanked(text, comments_only=True)


def _blanked(text: str, comments_only: bool) -> str | None:
    out: list[str] = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            i += 1
            at_line_start = True
            continue
        if at_line_start and c == "#" and not comments_only:
            end = _end_of_directive(text, i)
            out.append(_blank(text[i:end]))
            i = end
            continue
        if c in " \t\r\f\v":
            out.append(c)
            i += 1
            continue
        at_line_start = False
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(_comment(text[i:end], comments_only))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                return None
            out.append(_comment(text[i:end + 2], comments_only))
            i = end + 2
        elif c in "\"'":
            if c == '"' and i > 0 and text[i - 1] == "R":
                return None  # a raw string: its delimiters are not worth reading here
            end = _end_of_literal(text, i)
            if end is None:
                return None
            out.append(text[i:end] if comments_only else _blank(text[i:end]))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _end_of_directive(text: str, start: int) -> int:
    """Index just past a preprocessor line, its backslash continuations included."""
    i = start
    while True:
        end = text.find("\n", i)
        if end < 0:
            return len(text)
        if text[end - 1:end] == "\\" or text[end - 2:end] == "\\\r":
            i = end + 1
            continue
        return end


def _end_of_literal(text: str, start: int) -> int | None:
    quote, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == quote:
            return i + 1
        elif text[i] == "\n":
            return None
        else:
            i += 1
    return None


def _comment(segment: str, short: bool) -> str:
    """A comment blanked: to its length (positions kept), or, `short`, to one space and its
    newlines (what the compiler sees of it, whatever its length)."""
    return " " + "\n" * segment.count("\n") if short else _blank(segment)


def _blank(segment: str) -> str:
    return "".join(ch if ch == "\n" else " " for ch in segment)


def holds_code(text: str) -> bool:
    """True when the source may define something (any brace or `=` outside comments and
    literals): a source of declarations alone needs no translation unit of its own."""
    code = blank_noncode(text)
    return code is None or any(ch in code for ch in "{=")


def exported_declarations(texts: list[str], functions: tuple[str, ...]) -> list[str] | None:
    """One declaration per exported function, copied from where the sources declare or
    define it at the top level (e.g. `void square(at::Tensor x, at::Tensor out);`), or
    None when any function cannot be read without doubt."""
    codes = [blank_noncode(text) for text in texts]
    if any(code is None for code in codes):
        return None
    if any("PYBIND11_MODULE" in code or "TORCH_LIBRARY" in code for code in codes):
        return None  # the sources bind themselves
    found: dict[str, set[str]] = {name: set() for name in functions}
    for code in codes:
        for name, declaration in _top_level_functions(code, set(functions)):
            found[name].add(declaration)
    if any(len(declarations) != 1 or "" in declarations for declarations in found.values()):
        return None  # absent at the top level, overloaded, or in doubt
    return [next(iter(found[name])) for name in functions]


def _top_level_functions(code: str, names: set[str]):
    """(name, declaration) for every `<return type> name(<params>)` followed by `{` or `;`
    at brace depth 0. A candidate this reader doubts yields (name, "") — which never
    matches a good declaration, so the caller sees two and gives up."""
    depth, statement_start = 0, 0
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            statement_start = i + 1
        elif c == ";" and depth == 0:
            statement_start = i + 1
        elif depth == 0 and (c.isalpha() or c == "_"):
            word = _IDENTIFIER.match(code, i)
            name = word.group(0)
            if name in names and (code[i - 2:i] != "::") and _next_char(code, word.end()) == "(":
                yield name, _declaration(code, statement_start, i, word.end(), name)
            i = word.end()
            continue
        i += 1


def _next_char(code: str, index: int) -> str:
    rest = code[index:].lstrip()
    return rest[:1]


def _declaration(code: str, start: int, name_at: int, name_end: int, name: str) -> str:
    """`ret name(params);`, or "" when the text around the name is not a plain function."""
    prefix = " ".join(code[start:name_at].split())
    open_at = code.index("(", name_end)
    close_at = _matching_paren(code, open_at)
    if close_at is None or not prefix:
        return ""
    after = _next_char(code, close_at + 1)
    tail = code[close_at + 1:].lstrip()
    if tail.startswith("noexcept"):
        after = _next_char(tail, len("noexcept"))
    if after not in ("{", ";"):
        return ""
    words = set(_IDENTIFIER.findall(prefix))
    if words & _REFUSED_WORDS or any(ch in prefix for ch in "=()#\"'{}"):
        return ""
    params = " ".join(code[open_at + 1:close_at].split())
    return f"{prefix} {name}({params});"


def _matching_paren(code: str, open_at: int) -> int | None:
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            depth -= 1
            if depth == 0:
                return i
        elif code[i] in "{;":
            return None
    return None
