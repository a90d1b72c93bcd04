#!/usr/bin/env bash
# tests/cli/model_hybrid.sh: `ltrun model hybrid OUT --embed --head --layers` (the compact layer
# list, fresh kinds, --no-native, the global --seed): what it prints, the config it writes (kinds,
# native nemotron_h when the stack is one), the tokenizer files, model info, and its refusals.
source "$(dirname "$0")/common.bash"

# a small corpus of made-up words (training a tokenizer on the default corpus takes seconds)
python3 -c '
import random
r = random.Random(1)
for _ in range(200):
    print(" ".join("".join(r.choice("abcdefghijkl") for _ in range(r.randint(2, 5))) for _ in range(12)))
    print("%")' > corpus.txt
"$LTRUN" model new q --layers 4 --hidden 32 --heads 4 --kv-heads 2 --vocab 300 --corpus corpus.txt >/dev/null 2>&1
"$LTRUN" model new nh --arch nemotron_h --pattern 'M*-M' --hidden 32 --heads 4 --kv-heads 2 \
  --tokenizer q/tokenizer.json >/dev/null 2>&1
"$LTRUN" model new far --layers 2 --hidden 32 --heads 4 --kv-heads 2 --vocab 280 --corpus corpus.txt >/dev/null 2>&1

out=$("$LTRUN" --seed 3 model hybrid h --embed nh --head q --layers nh:0-1,q:2-3,mlp 2>&1)
check "prints what it wrote" contains "$out" "wrote h: ltrun_hybrid, 5 layers (mamba,attention,decoder,decoder,mlp)"
check "one fresh layer" contains "$out" "1 fresh layers"
kinds=$(python3 -c 'import json; c = json.load(open("h/config.json")); print(c["model_type"], c["layer_types"], c["layer_config_ids"], [x["model_type"] for x in c["layer_configs"]], c["hybrid_sources"]["layers"][4]["seed"])')
check "config lists the kinds and layer configs" equals "$kinds" \
  "ltrun_hybrid ['mamba', 'attention', 'decoder', 'decoder', 'mlp'] [0, 0, 1, 1, 0] ['nemotron_h', 'qwen3'] 3"
check "tokenizer files of the embedding donor" cmp -s h/tokenizer.json nh/tokenizer.json
info=$("$LTRUN" model info h 2>&1)
check "model info reads it" contains "$info" "ltrun_hybrid, 5 layers, hidden 32"

out=$("$LTRUN" model hybrid n --embed nh --layers nh:0-2,mamba@nh 2>&1)
check "one architecture: native config" contains "$out" "wrote n: nemotron_h, 4 layers"
pattern=$(python3 -c 'import json; print(json.load(open("n/config.json"))["hybrid_override_pattern"])')
check "native pattern" equals "$pattern" "M*-M"
out=$("$LTRUN" model hybrid n2 --embed nh --layers nh:0-2,mamba@nh --no-native 2>&1)
check "--no-native" contains "$out" "wrote n2: ltrun_hybrid"

out=$("$LTRUN" model hybrid bad --embed q --layers q:0,far:1 2>&1)
check "vocabulary mismatch refused" [ $? -ne 0 ]
check "names both donors" contains "$out" "donors q (vocab_size 300) and far (vocab_size 280) have different vocabularies"
check "nothing written" [ ! -e bad/config.json ]
out=$("$LTRUN" model hybrid h --embed q --layers q:0 2>&1)
check "existing folder refused" contains "$out" "h exists and is not empty"

# an embedding donor without tokenizer.json (issue 23, 12e): written, with a warning on stderr
# that names the donor and the output and the donor that has one (its tokenizer is not copied)
cp -r nh notok && rm notok/tokenizer.json
"$LTRUN" model hybrid nt --embed notok --head q --layers notok:0-1,q:2 >nt.out 2>nt.err
check "written without a tokenizer" [ -e nt/config.json ] && check "no tokenizer.json" [ ! -e nt/tokenizer.json ]
warn=$(cat nt.err)
check "warns on stderr" contains "$warn" "hybrid: warning: the embedding donor notok has no tokenizer.json, so nt is written without one"
check "names the donor that has one" contains "$warn" "donor q has one, but it is not copied"
check "stdout keeps the summary" contains "$(cat nt.out)" "wrote nt:"
out=$("$LTRUN" model hybrid ok2 --embed nh --layers nh:0 2>&1 >/dev/null)
check "no warning when the embedding donor has one" equals "$out" ""
finish
