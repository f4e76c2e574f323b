"""Build a tiny, randomly initialised BGE-M3-shaped model directory offline (no hub access here).

It has BGE-M3's layout: an XLM-RoBERTa encoder with a fast tokenizer, plus ``colbert_linear.pt`` and
``sparse_linear.pt``, so FlagEmbedding's ``BGEM3FlagModel`` loads it and produces dense vectors and
sparse lexical weights through the real code path. Its numbers mean nothing; its shapes and plumbing
are what the tests check. The tokenizer is a word-level vocabulary trained on a few sentences of
English and Chinese (Chinese split per character), enough for every test text to map to known ids.

    python tests/fakes/tiny_bge_m3.py OUT_DIR      (run with an interpreter that has transformers)
"""

from __future__ import annotations

import sys
from pathlib import Path

HIDDEN = 32
CORPUS = [
    "database connection pool exhausted hikari timeout mysql slow query",
    "jvm garbage collection full gc heap out of memory",
    "kubernetes pod crashloop oomkilled node disk pressure",
    "payment service latency p99 timeout checkout",
    "数据库 连接池 耗尽 超时 慢查询 内存 溢出 支付 服务 延迟",
]


def _tokenizer(out: Path, max_length: int) -> int:
    """The word-level tokenizer, saved to ``out``; its vocabulary size."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    # Whitespace + punctuation split, and each CJK character on its own (BERT-style Chinese handling).
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=special, min_frequency=1))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=max_length,
    )
    fast.save_pretrained(out)
    return int(tok.get_vocab_size())


def _save(out: Path, vocab: int, hidden: int, *, layers: int, heads: int, intermediate: int, positions: int) -> None:
    """Random XLM-RoBERTa weights plus BGE-M3's two heads (``colbert_linear.pt``, ``sparse_linear.pt``)."""
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel

    torch.manual_seed(0)
    config = XLMRobertaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=positions,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    XLMRobertaModel(config).save_pretrained(out)
    torch.save(torch.nn.Linear(hidden, hidden).state_dict(), out / "colbert_linear.pt")
    sparse = torch.nn.Linear(hidden, 1)
    torch.nn.init.constant_(sparse.bias, 1.0)  # every token gets a positive weight after the ReLU
    torch.save(sparse.state_dict(), out / "sparse_linear.pt")


def build(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    vocab = _tokenizer(out, 512)
    _save(out, vocab, HIDDEN, layers=2, heads=2, intermediate=64, positions=520)
    return out


def build_full_size(out: Path) -> Path:
    """Random weights in BGE-M3's shape (XLM-RoBERTa large: 24 layers, 1,024 wide, 8,194 positions,
    250,002 tokens) with the small tokenizer: for speed and memory checks on a GPU, never for quality."""
    out.mkdir(parents=True, exist_ok=True)
    _tokenizer(out, 8192)
    _save(out, 250_002, 1024, layers=24, heads=16, intermediate=4096, positions=8194)
    return out


if __name__ == "__main__":
    print(build(Path(sys.argv[1])))
