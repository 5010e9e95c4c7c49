"""Documentation markup (reStructuredText, Perl's POD) to prose: paragraphs, then sentences.

What a pretraining corpus wants from documentation is its running text. Code (literal blocks,
doctests, verbatim paragraphs), tables, directives that hold no prose (toctree, code-block,
image, ...), heading underlines and field lists are dropped; inline markup keeps its words
(``:func:`json.dumps``` -> ``json.dumps``, ``I<text>`` -> ``text``). The rules are a screen
long on purpose: they need to be right for prose, not a full parser.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

# Directives whose body is code, layout or metadata rather than prose.
RST_SKIPPED_DIRECTIVES = frozenset({
    "code", "code-block", "sourcecode", "literalinclude", "highlight", "math", "toctree",
    "image", "figure", "table", "csv-table", "list-table", "kernel-doc", "kernel-include",
    "kernel-abi", "kernel-feat", "include", "only", "index", "module", "moduleauthor",
    "sectionauthor", "productionlist", "raw", "doctest", "testcode", "testoutput", "testsetup",
    "graphviz", "digraph", "cssclass", "tabularcolumns", "c:namespace", "c:namespace-push",
    "c:namespace-pop", "contents", "sectnum", "audit-event", "impl-detail", "miscnews",
    "opcodedesc", "availability", "flat-table", "ifconfig", "glossary", "rst-class"})

_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+_.:<>])\1{2,}\s*$")
_RST_TABLE_BORDER = re.compile(r"^=+( +=+)+$")  # a simple table's border: "=====  ====="
_RST_DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(.*)$")
_RST_BULLET = re.compile(r"^(?:[-*+\u2022]|#\.|\d+[.)]|\(\d+\)|[a-z][.)])\s+")
_RST_ROLE = re.compile(r":[\w:+-]+:`~?!?([^`<]*?)\s*(?:<[^`>]*>)?`")
_RST_LINK = re.compile(r"`([^`<]*?)\s*(?:<[^`>]*>)?`__?")
_RST_LITERAL = re.compile(r"``(.+?)``")
_RST_EMPHASIS = re.compile(r"\*\*?([^*\s][^*]*?)\*\*?")
_RST_NOISE = re.compile(r"\|[\w -]+\||\[#?[\w-]*\]_|\\(?=\S)")

# The space after '.', '!' or '?' (and up to two closing quotes or brackets, which stay with
# their sentence) before a capital or a digit, perhaps after an opening quote or bracket.
_SENTENCE_END = re.compile(
    r"(?:(?<=[.!?])|(?<=[.!?][\"')\]])|(?<=[.!?][\"')\]]{2}))\s+(?=[\"'(\[]?[A-Z0-9])")
_LETTERS = re.compile(r"[A-Za-z]")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def rst_paragraphs(text: str) -> Iterator[str]:
    """The prose paragraphs of a reStructuredText document, inline markup removed."""
    lines = text.expandtabs(8).splitlines()
    paragraph: list[str] = []
    skip_deeper_than = None  # skipping a literal block or directive body indented beyond this

    def flush():
        if paragraph:
            text = clean_rst_inline(" ".join(paragraph))
            paragraph.clear()
            if text:  # not a bare "::" or a paragraph of markup only
                yield text

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        i += 1
        if skip_deeper_than is not None:
            if not stripped or _indent(line) > skip_deeper_than:
                continue
            skip_deeper_than = None
        if not stripped or _RST_ADORNMENT.match(stripped):
            yield from flush()
            continue
        if stripped.startswith(">>>"):  # a doctest block: examples and output, to a blank line
            yield from flush()
            while i < len(lines) and lines[i].strip():
                i += 1
            continue
        if _RST_TABLE_BORDER.match(stripped):  # a simple table: to a border before a blank line
            yield from flush()
            while i < len(lines) and not (_RST_TABLE_BORDER.match(lines[i].strip()) and
                                          (i + 1 == len(lines) or not lines[i + 1].strip())):
                i += 1
            i += 1
            continue
        if stripped.startswith(("+-", "+=", "|", "...")) or re.match(r"^:[\w -]+:(\s|$)", stripped):
            yield from flush()
            continue
        directive = _RST_DIRECTIVE.match(stripped)
        if directive or stripped.startswith(".."):
            yield from flush()
            name = directive.group(1).lower() if directive else ""
            while stripped.endswith("\\") and i < len(lines):  # a signature continued
                stripped = lines[i].strip()
                i += 1
            if not directive or name in RST_SKIPPED_DIRECTIVES or name.startswith("kernel-"):
                skip_deeper_than = _indent(line)  # a comment, target or non-prose directive
            # other directives (note, warning, function, ...): their indented body is prose;
            # the directive's own argument (a signature) and its :options: are not.
            continue
        bullet = _RST_BULLET.match(stripped)
        if bullet:
            yield from flush()
            stripped = stripped[bullet.end():]
        paragraph.append(stripped)
        if stripped.endswith("::"):  # the paragraph introduces a literal block
            paragraph[-1] = stripped[:-2].rstrip() + ("" if stripped == "::" else ":")
            yield from flush()
            skip_deeper_than = _indent(line)
    yield from flush()


def clean_rst_inline(text: str) -> str:
    text = _RST_ROLE.sub(r"\1", text)
    text = _RST_LINK.sub(r"\1", text)
    text = _RST_LITERAL.sub(r"\1", text)
    text = _RST_EMPHASIS.sub(r"\1", text)
    text = _RST_NOISE.sub("", text)
    return re.sub(r"\s+", " ", text).strip()


_POD_SKIPPED_COMMANDS = ("=pod", "=cut", "=over", "=back", "=encoding", "=for")


def pod_paragraphs(text: str) -> Iterator[str]:
    """The prose paragraphs of a POD document: headings and items as their own paragraphs,
    verbatim (indented) paragraphs and =begin ... =end regions left out."""
    in_region = False
    for block in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")):
        if not block.strip():
            continue
        first = block.lstrip("\n")
        if first.startswith("=begin"):
            in_region = True
            continue
        if first.startswith("=end"):
            in_region = False
            continue
        if in_region or first[:1] in (" ", "\t") or first.startswith(_POD_SKIPPED_COMMANDS):
            continue
        if first.startswith("="):  # =head1 NAME, =item text: keep the text, not a bullet
            first = re.sub(r"^=\S*\s*(\*(\s+|$))?", "", first)
            if not first.strip() or re.fullmatch(r"\d+\.?", first.strip()):
                continue
        yield re.sub(r"\s+", " ", clean_pod_inline(first)).strip()


# X<text>, or X<< text >> (as many brackets on each side, with a space inside) when the text holds
# a bracket: C<< $a->b >>.
_POD_CODE = re.compile(
    r"([A-Z])(?:<<<<\s+(.*?)\s+>>>>|<<<\s+(.*?)\s+>>>|<<\s+(.*?)\s+>>|<([^<>]*)>)", re.S)
_POD_ESCAPES = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/", "quot": '"', "amp": "&"}


def clean_pod_inline(text: str) -> str:
    """Formatting codes to their text, innermost first: B<bold> -> bold, L<text|target> ->
    text, L<perlfunc/open> -> perlfunc/open, E<gt> -> >, X<index> and Z<> -> nothing."""
    def replace(match):
        code, inner = match.group(1), next(g for g in match.groups()[1:] if g is not None)
        if code in "XZ":
            return ""
        if code == "E":
            return _POD_ESCAPES.get(inner, "")
        if code == "L":
            return inner.split("|", 1)[0] if "|" in inner else inner.strip('"')
        return inner
    previous = None
    while previous != text:
        previous, text = text, _POD_CODE.sub(replace, text)
    return text


def sentences(paragraphs: Iterable[str], min_words: int = 3) -> Iterator[str]:
    """Paragraphs split after '.', '!' or '?' before a capital or digit; sentences with fewer
    than `min_words` words or without a letter are left out (stray labels, version numbers)."""
    for paragraph in paragraphs:
        for sentence in _SENTENCE_END.split(paragraph):
            sentence = sentence.strip()
            if len(sentence.split()) >= min_words and _LETTERS.search(sentence):
                yield sentence
