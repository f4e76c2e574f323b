"""The English gloss of a Chinese query (rag/gloss.py): what the dictionary gives, what it leaves."""

from __future__ import annotations

import io
import pickle

import pytest

from rag.gloss import _NoClasses, dictionary, gloss


def test_a_chinese_query_is_glossed_word_by_word_in_english() -> None:
    g = gloss("当容器中虚拟机（VM）的内存不足20MB时，会触发此警报。")
    words = g.split()
    # The computing sense of 容器 comes first (the dictionary lists "receptacle" before it); the Latin
    # identifier and the number stay as they were.
    assert "container" in words and "receptacle" not in words
    assert "virtual machine" in g and "VM" in words and "20MB" in words and "alarm" in words
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in g)  # every Chinese word was replaced


def test_english_text_has_no_gloss_and_unknown_words_are_glossed_by_their_parts() -> None:
    assert gloss("KubePodCrashLooping: the pod restarts") == ""
    assert gloss("") == ""
    # 磁盘镜像版本 is no dictionary word: jieba's search segmentation finds its known parts.
    assert "disk" in gloss("磁盘镜像版本").split()
    table = dictionary()
    assert len(table) > 100_000 and table["节点"] == ["node"]


def test_the_dictionary_file_may_name_no_class() -> None:
    # The data file is read with an unpickler that constructs nothing: a pickle naming a class fails.
    hostile = pickle.dumps([io.StringIO("x")])
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        _NoClasses(io.BytesIO(hostile)).load()
    assert _NoClasses(io.BytesIO(pickle.dumps(["a b [c] /d/"]))).load() == ["a b [c] /d/"]
