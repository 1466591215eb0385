"""The one token counter of the project (issue 23): the query's budget ladder, the context
bundle and the traversal's evidence budget all count with it, so a ``budget_tokens`` means the
same thing on every endpoint.

A token is ``chars_per_token`` characters of the text as the agent receives it (4 by default:
the usual figure for English prose and JSON with the tokenizers agents are billed by), rounded
up. Counting characters keeps the count additive, which the ladder (it adds up the size change
of each cut) and the bundle packer (it adds up blocks) rely on, and costs no model load. A
caller that needs another rule passes its own :class:`TokenCounter`; every counting function
takes one (``counter=``) and defaults to :data:`DEFAULT_COUNTER`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TokenCounter:
    """Tokens as ``ceil(characters / chars_per_token)``."""

    chars_per_token: int = 4

    def tokens_of_chars(self, chars: int) -> int:
        return -(-max(chars, 0) // self.chars_per_token)

    def chars_of_tokens(self, tokens: int) -> int:
        """The most characters that still count as ``tokens``."""
        return tokens * self.chars_per_token

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        return self.tokens_of_chars(len(text or ""))


DEFAULT_COUNTER = TokenCounter()


def count_tokens(text: str, counter: TokenCounter = DEFAULT_COUNTER) -> int:
    """Tokens of ``text`` with ``counter`` (the project's one counter by default)."""
    return counter.count(text)
