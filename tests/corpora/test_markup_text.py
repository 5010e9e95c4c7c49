"""Tests for electra_tf.corpora.markup_text: reStructuredText and POD to prose, then sentences."""

import pytest

from electra_tf.corpora.markup_text import (clean_pod_inline, clean_rst_inline, pod_paragraphs,
                                            rst_paragraphs, sentences)


def rst(text):
    return list(rst_paragraphs(text))


def pod(text):
    return list(pod_paragraphs(text))


# ---------------------------------------------------------------------------------------------
# reStructuredText


def test_rst_headings_are_paragraphs_of_their_own_and_underlines_are_dropped():
    text = ("=============\n Page title\n=============\n"
            "Section heading\n---------------\n"
            "The first line of a paragraph\ncontinues on the next line.\n\n"
            "Another paragraph.\n\n"
            "~~~~~\n")
    assert rst(text) == ["Page title", "Section heading",
                         "The first line of a paragraph continues on the next line.",
                         "Another paragraph."]


def test_rst_literal_blocks_after_a_double_colon_are_dropped():
    text = ("Use it like this::\n\n"
            "    import json\n\n"
            "    json.dumps(value)\n\n"
            "After the code.\n\n"
            "::\n\n"
            "    more code\n\n"
            "The end.\n")
    assert rst(text) == ["Use it like this:", "After the code.", "The end."]


def test_rst_literal_block_inside_an_indented_body_ends_with_the_body_indent():
    text = (".. note::\n\n"
            "   Run this::\n\n"
            "      make all\n\n"
            "   Then read the log.\n")
    assert rst(text) == ["Run this:", "Then read the log."]


@pytest.mark.parametrize("directive", ["code-block:: python", "toctree::", "literalinclude:: a.py",
                                       "kernel-doc:: include/linux/x.h", "image:: a.png",
                                       "math::", "productionlist::"])
def test_rst_skipped_directives_are_dropped_with_their_body(directive):
    text = (f"Before.\n\n.. {directive}\n   :maxdepth: 2\n\n"
            "   hidden body line\n\n      hidden deeper line\n\nAfter.\n")
    assert rst(text) == ["Before.", "After."]


def test_rst_prose_directives_keep_their_body_but_not_their_argument_or_options():
    text = (".. note::\n   :class: custom\n\n"
            "   The note body is prose.\n\n"
            ".. function:: open(file, mode='r')\n\n"
            "   Open *file* and return a stream.\n\n"
            ".. warning:: Inline argument.\n\n"
            "   Warning body.\n")
    assert rst(text) == ["The note body is prose.", "Open file and return a stream.",
                         "Warning body."]


def test_rst_directive_signature_continued_with_a_backslash_is_not_prose():
    text = (".. function:: open(file, mode='r', \\\n"
            "              buffering=-1, \\\n"
            "              encoding=None)\n\n"
            "   Open the file and return a stream.\n\n"
            "Outside.\n")
    assert rst(text) == ["Open the file and return a stream.", "Outside."]


def test_rst_comments_and_targets_are_dropped_with_their_indented_lines():
    text = (".. This is a comment\n   that spans two lines.\n\n"
            ".. _label-of-a-section:\n\n"
            "..\n   An empty comment's body.\n\n"
            "Visible text.\n")
    assert rst(text) == ["Visible text."]


def test_rst_bullets_and_enumerations_become_paragraphs_of_their_own():
    text = ("A list follows:\n"
            "- First bullet item\n  continued here.\n"
            "- Second bullet item.\n"
            "* Starred item.\n\n"
            "1. Numbered item.\n"
            "#. Auto-numbered item.\n")
    assert rst(text) == ["A list follows:", "First bullet item continued here.",
                         "Second bullet item.", "Starred item.", "Numbered item.",
                         "Auto-numbered item."]


def test_rst_grid_tables_and_line_blocks_are_dropped():
    text = ("Before the table.\n\n"
            "+--------+--------+\n| Header | Other  |\n+========+========+\n"
            "| cell   | cell   |\n+--------+--------+\n\n"
            "After the table.\n")
    assert rst(text) == ["Before the table.", "After the table."]


def test_rst_simple_tables_are_dropped():
    text = ("Before the table.\n\n"
            "=====  ===========\n"
            "Name   Meaning\n"
            "=====  ===========\n"
            "r      Open for reading words\n\n"
            "w      Open for writing words\n"
            "=====  ===========\n\n"
            "After the table.\n")
    assert rst(text) == ["Before the table.", "After the table."]


def test_rst_doctest_blocks_are_dropped_with_their_output():
    text = ("An example:\n\n"
            ">>> print('hello there world')\n"
            "hello there world\n"
            ">>> for x in y:\n"
            "...     pass\n\n"
            "After the example.\n")
    assert rst(text) == ["An example:", "After the example."]


def test_rst_field_lists_are_dropped():
    text = ":Author: Somebody\n:Release: 1.0\n\nBody text.\n"
    assert rst(text) == ["Body text."]


@pytest.mark.parametrize("markup, text", [
    (":func:`json.dumps`", "json.dumps"),
    (":class:`~collections.OrderedDict`", "collections.OrderedDict"),
    (":ref:`the tutorial <tut-intro>`", "the tutorial"),
    (":c:func:`PyObject_New`", "PyObject_New"),
    ("`Python's site <https://www.python.org/>`_", "Python's site"),
    ("`anonymous link <https://example.org>`__", "anonymous link"),
    ("``x = 1``", "x = 1"),
    ("*emphasis*", "emphasis"),
    ("**strong words**", "strong words"),
    ("a |substitution| here", "a here"),
    ("a footnote [#]_ here", "a footnote here"),
])
def test_rst_inline_markup_is_reduced_to_its_text(markup, text):
    assert clean_rst_inline(f"See {markup} now.") == f"See {text} now."
    assert rst(f"See {markup} now.\n") == [f"See {text} now."]


# ---------------------------------------------------------------------------------------------
# POD


def test_pod_headings_and_items_keep_their_text():
    text = ("=head1 NAME\n\nperlx - an example\n\n=head2 Second level\n\n"
            "=over 4\n\n=item *\n\nBullet body.\n\n=item * Bullet on the same line\n\n"
            "=item 1.\n\n=item Named item\n\nItem body.\n\n=back\n")
    assert pod(text) == ["NAME", "perlx - an example", "Second level", "Bullet body.",
                         "Bullet on the same line", "Named item", "Item body."]


def test_pod_verbatim_paragraphs_and_commands_without_prose_are_dropped():
    text = ("=pod\n\n=encoding utf8\n\nFirst paragraph\nwraps here.\n\n"
            "    my $code = 1;\n    print $code;\n\n"
            "\tmy $tabbed = 2;\n\n\n"
            "    after two blank lines;\n\n"
            "=for comment not prose\n\n"
            "Second paragraph.\n\n=cut\n")
    assert pod(text) == ["First paragraph wraps here.", "Second paragraph."]


def test_pod_begin_end_regions_are_dropped():
    text = ("Before.\n\n=begin html\n\n<p>Hidden paragraph.</p>\n\nAlso hidden.\n\n"
            "=end html\n\nAfter.\n")
    assert pod(text) == ["Before.", "After."]


@pytest.mark.parametrize("markup, text", [
    ("B<bold> and I<italic>", "bold and italic"),
    ("F<file.txt> and S<non breaking>", "file.txt and non breaking"),
    ("B<I<nested> codes>", "nested codes"),
    ("C<< $a->b >>", "$a->b"),
    ("C<<< $x <=> $y >>>", "$x <=> $y"),
    ("C<< E<gt> >>", ">"),
    ("L<the docs|perlfunc/open>", "the docs"),
    ("L<< text|perlop/\"<>\" >>", "text"),
    ("L<perlsyn>", "perlsyn"),
    ("E<gt> E<lt> E<verbar> E<sol>", "> < | /"),
    ("X<index entry>word", "word"),
    ("X<< a->b >>Z<>word", "word"),
])
def test_pod_formatting_codes_are_reduced_to_their_text(markup, text):
    assert clean_pod_inline(markup) == text
    assert pod(f"Start {markup} end.\n") == [f"Start {text} end."]


# ---------------------------------------------------------------------------------------------
# Sentences


def test_sentences_split_after_end_punctuation_before_a_capital_or_digit():
    paragraph = ('One two three. Four five six! Is seven eight nine? "Quoted words come next." '
                 "(Parenthesised words end here.) 2024 was a year. lower case stays joined. "
                 "e.g. this stays too")
    assert list(sentences([paragraph])) == [
        "One two three.", "Four five six!", "Is seven eight nine?",
        '"Quoted words come next."', "(Parenthesised words end here.)",
        "2024 was a year. lower case stays joined. e.g. this stays too"]


def test_sentences_respect_min_words_and_drop_lines_without_letters():
    paragraphs = ["Too short. Just long enough here.", "12 34 56 78 90.", "--- +++ ===",
                  "Two words"]
    assert list(sentences(paragraphs)) == ["Just long enough here."]
    assert list(sentences(paragraphs, min_words=1)) == [
        "Too short.", "Just long enough here.", "Two words"]


def test_sentences_of_several_paragraphs_never_join_them():
    assert list(sentences(["First paragraph ends without a stop", "Second one does too"])) == [
        "First paragraph ends without a stop", "Second one does too"]
