#!/usr/bin/env python3
"""Builds the SentencePiece-style BPE fixtures in tests/data/text/spm/ and their references.

Needs python3-tokenizers (Hugging Face's Rust `tokenizers`, 0.23 when these were made), e.g.
in the Debian sid chroot that scripts/check-torch2 makes. From the repository root:

  cp tests/data/text/make_spm_fixtures.py tests/data/text/parity_texts.json /srv/sid/tmp/
  cd /usr/share/games/fortunes && cat fortunes computers science literature wisdom \\
      people humorists > /srv/sid/tmp/spm_corpus.txt && cd -
  chroot /srv/sid python3 /tmp/make_spm_fixtures.py /tmp/spm_corpus.txt \\
      /tmp/parity_texts.json /tmp/spm
  rm -rf tests/data/text/spm && cp -r /srv/sid/tmp/spm tests/data/text/spm

Hugging Face's own BpeTrainer learns a small vocabulary from the corpus (Debian's English
fortunes), arranged as Llama 2 arranges its own: <unk>=0, <s>=1, </s>=2, <0x00>..<0xFF> =
3..258, then the learned pieces. That vocabulary is written in four layouts, each to
spm/NAME/tokenizer.json:

  llama2           legacy Llama 2 / TinyLlama / Mistral v0.1: Prepend + Replace normalizer,
                   no pre-tokenizer, byte_fallback, decoder Replace/ByteFallback/Fuse/Strip
  metaspace_first  transformers' newer Llama layout: Metaspace pre-tokenizer with
                   prepend_scheme "first", split false; the same decoder
  metaspace_always Metaspace prepend_scheme "always", split true; decoder ByteFallback then
                   Metaspace; a template adding <s> ... </s>
  unk              byte_fallback false, fuse_unk true: characters outside the vocabulary
                   become <unk>; Metaspace in the old serialization (add_prefix_space)

Each is loaded back with tokenizers.Tokenizer.from_file, and spm/NAME/reference.json holds,
for every text of parity_texts.json and a few extra ones about added tokens and unknown
characters, what that library gives: ids with and without special tokens, and decodes.
"""
import json
import os
import sys

import tokenizers
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

META = "\u2581"  # ▁
SPECIALS = ["<unk>", "<s>", "</s>"]
BYTE_TOKENS = ["<0x%02X>" % b for b in range(256)]
VOCAB_SIZE = 900  # with the 3 special and 256 byte tokens
LIMIT_ALPHABET = 90  # rarer characters are left to byte fallback / <unk>

# Texts beyond parity_texts.json: added tokens amid text (where "first" and "always" and the
# legacy Prepend differ), white space around them, characters the corpus lacks.
EXTRA_TEXTS = [
    "<s>hello world",
    "hello<s>world",
    "hello <s> world",
    "Hi</s>   there <s>",
    " <s> ",
    "<unk>",
    "a<unk>b</s>",
    "naïve café 你好 and Ωmega",
    "ÆØÅ æøå ĳ ŉ",
    "literal " + META + " metaspace " + META + META + " chars",
    "x\t\ty\n\nz",
]


def read_corpus(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    texts = []
    for fortune in text.split("\n%\n"):
        fortune = " ".join(line.strip() for line in fortune.splitlines() if line.strip())
        if fortune:
            texts.append(fortune)
    return texts


def train(texts):
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always",
                                                 split=True)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=2,
                                  special_tokens=SPECIALS + BYTE_TOKENS,
                                  limit_alphabet=LIMIT_ALPHABET, initial_alphabet=[META],
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    model = json.loads(tok.to_str())["model"]
    trained = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    vocab = {}
    for token in SPECIALS + BYTE_TOKENS + [t for t, _ in trained]:
        vocab.setdefault(token, len(vocab))
    merges = []
    for m in model["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ")
        assert " " not in a + b, "a token holds a space; \"a b\" merges would be ambiguous"
        merges.append(a + " " + b)
    return vocab, merges


def added_tokens():
    return [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True} for i, t in enumerate(SPECIALS)]


def template(single_after=None):
    single = [{"SpecialToken": {"id": "<s>", "type_id": 0}},
              {"Sequence": {"id": "A", "type_id": 0}}]
    pair = single + [{"SpecialToken": {"id": "<s>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}]
    specials = {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}
    if single_after:
        single = single + [{"SpecialToken": {"id": single_after, "type_id": 0}}]
        specials[single_after] = {"id": single_after, "ids": [SPECIALS.index(single_after)],
                                  "tokens": [single_after]}
    return {"type": "TemplateProcessing", "single": single, "pair": pair,
            "special_tokens": specials}


def llama_decoder():
    return {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": META}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}


def metaspace(scheme, split):
    return {"type": "Metaspace", "replacement": META, "prepend_scheme": scheme, "split": split}


def tokenizer_json(vocab, merges, byte_fallback, normalizer, pre_tokenizer, decoder,
                   post_processor):
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added_tokens(),
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": decoder,
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": byte_fallback, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def layouts(vocab, merges):
    legacy_normalizer = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": META},
        {"type": "Replace", "pattern": {"String": " "}, "content": META}]}
    old_metaspace = {"type": "Metaspace", "replacement": META, "add_prefix_space": True}
    return {
        "llama2": tokenizer_json(vocab, merges, True, legacy_normalizer, None, llama_decoder(),
                                 template()),
        "metaspace_first": tokenizer_json(vocab, merges, True, None, metaspace("first", False),
                                          llama_decoder(), template()),
        "metaspace_always": tokenizer_json(
            vocab, merges, True, None, metaspace("always", True),
            {"type": "Sequence", "decoders": [{"type": "ByteFallback"},
                                              metaspace("always", True)]},
            template(single_after="</s>")),
        "unk": tokenizer_json(vocab, merges, False, None, old_metaspace, old_metaspace,
                              template()),
    }


def dump_tokenizer(obj, path):
    # one vocab entry or merge per line: small, and readable in a diff
    text = json.dumps(obj, ensure_ascii=False, indent=1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")


def reference(tok, texts):
    items = []
    for text in texts:
        ids = tok.encode(text, add_special_tokens=True).ids
        plain = tok.encode(text, add_special_tokens=False).ids
        items.append({
            "text": text,
            "ids": ids,
            "ids_no_special": plain,
            "decoded": tok.decode(ids, skip_special_tokens=False),
            "decoded_skip_special": tok.decode(ids, skip_special_tokens=True),
            "decoded_no_special": tok.decode(plain, skip_special_tokens=False),
        })
    return items


def dump_reference(items, path, name):
    lines = [json.dumps(item, ensure_ascii=False, separators=(",", ":")) for item in items]
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"tokenizers_version":%s,"fixture":%s,"items":[\n' %
                (json.dumps(tokenizers.__version__), json.dumps(name)))
        f.write(",\n".join(lines))
        f.write("\n]}\n")


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: make_spm_fixtures.py CORPUS.txt PARITY_TEXTS.json OUT_DIR")
    corpus, texts_file, out = sys.argv[1:]
    with open(texts_file, encoding="utf-8") as f:
        texts = json.load(f) + EXTRA_TEXTS
    vocab, merges = train(read_corpus(corpus))
    assert len(vocab) <= VOCAB_SIZE and vocab["<0x00>"] == 3 and vocab["<0xFF>"] == 258
    for name, obj in layouts(vocab, merges).items():
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "tokenizer.json")
        dump_tokenizer(obj, path)
        tok = Tokenizer.from_file(path)  # the references come from the file as written
        assert tok.get_vocab_size() == len(vocab)
        items = reference(tok, texts)
        dump_reference(items, os.path.join(folder, "reference.json"), name)
        same = sum(item["decoded_no_special"] == item["text"] for item in items)
        print(f"{name}: {len(vocab)} tokens, {len(merges)} merges, {len(items)} texts, "
              f"{same} round-trip")


if __name__ == "__main__":
    main()
