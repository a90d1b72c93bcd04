#!/usr/bin/env python3
"""experiments/bench/hf_forward.py: the HF transformers side of experiments/bench/forward.lua.

Measures one checkpoint exactly as forward.lua measures it in ltrun: prefill = one forward
pass over batch x prompt random ids with logits for the last position only, the best of
`repeats`; decode = greedy generate of new_tokens tokens (no stop) minus generate of 1 token,
back to back in each repeat, over new_tokens - 1 steps, the best positive difference (none
positive: decode_tokens_per_s is null and the run says so on stderr). Prints one JSON object
{"torch": ..., "transformers": ..., "rows": [{"batch", "prefill_tokens_per_s",
"decode_tokens_per_s"}]} on stdout.

  python3 experiments/bench/hf_forward.py MODEL_DIR --batches 1,16,64 --prompt 128 \
      --new-tokens 32 --repeats 2 --device cpu --dtype float32
"""
import argparse
import inspect
import json
import sys
import time

import torch
import transformers
from transformers import AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--batches", default="1,16,64")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--attn", default="sdpa", help="HF attn_implementation (sdpa, eager, ...)")
    args = ap.parse_args()
    if args.new_tokens < 2:
        ap.error("--new-tokens must be at least 2 (decode = tokens 2..n)")

    dtype = getattr(torch, args.dtype)
    key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation=args.attn,
                                                 **{key: dtype}).to(args.device).eval()
    vocab = model.config.vocab_size
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)

    def timed(fn):
        best = float("inf")
        for _ in range(args.repeats):
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            best = min(best, time.perf_counter() - t0)
        return best

    # logits for the last position only: `logits_to_keep` from transformers 4.45 on
    params = inspect.signature(model.forward).parameters
    last_only = ({"logits_to_keep": 1} if "logits_to_keep" in params else
                 {"num_logits_to_keep": 1} if "num_logits_to_keep" in params else {})

    g = torch.Generator().manual_seed(1)
    rows = []
    for b in (int(x) for x in args.batches.split(",") if x.strip()):
        ids = torch.randint(0, vocab, (b, args.prompt), generator=g).to(args.device)
        mask = torch.ones_like(ids)
        def gen(n):
            sync()
            t0 = time.perf_counter()
            model.generate(input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=n,
                           min_new_tokens=n, eos_token_id=None, pad_token_id=0)
            sync()
            return time.perf_counter() - t0

        with torch.no_grad():
            prefill = timed(lambda: model(input_ids=ids, attention_mask=mask, use_cache=False, **last_only))
            diffs = []
            for _ in range(args.repeats):
                one = gen(1)
                diffs.append(gen(args.new_tokens) - one)
        positive = [d for d in diffs if d > 0]
        decode = b * (args.new_tokens - 1) / min(positive) if positive else None
        rows.append({"batch": b, "prefill_tokens_per_s": b * args.prompt / prefill,
                     "decode_tokens_per_s": decode})
        print(f"hf batch {b}: prefill {rows[-1]['prefill_tokens_per_s']:.0f} tok/s, decode "
              + (f"{decode:.0f} tok/s" if decode else "failed (never slower than 1 token)"),
              file=sys.stderr)
    json.dump({"torch": torch.__version__, "transformers": transformers.__version__, "rows": rows},
              sys.stdout)
    print()


if __name__ == "__main__":
    main()
