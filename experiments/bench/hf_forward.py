#!/usr/bin/env python3
"""experiments/bench/hf_forward.py: the HF transformers side of experiments/bench/forward.lua.

Measures one checkpoint exactly as forward.lua measures it in ltrun: prefill = one forward
pass over batch x prompt random ids with logits for the last position only; decode = greedy
generate of new_tokens tokens (no stop), minus the prefill, over new_tokens - 1 steps; each
the best of `repeats`. Prints one JSON object {"torch": ..., "transformers": ..., "rows":
[{"batch", "prefill_tokens_per_s", "decode_tokens_per_s"}]} on stdout.

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
        with torch.no_grad():
            prefill = timed(lambda: model(input_ids=ids, attention_mask=mask, use_cache=False, **last_only))
            total = timed(lambda: model.generate(
                input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=args.new_tokens,
                min_new_tokens=args.new_tokens, eos_token_id=None, pad_token_id=0))
        rows.append({"batch": b, "prefill_tokens_per_s": b * args.prompt / prefill,
                     "decode_tokens_per_s": b * (args.new_tokens - 1) / max(total - prefill, 1e-9)})
        print(f"hf batch {b}: prefill {rows[-1]['prefill_tokens_per_s']:.0f} tok/s, "
              f"decode {rows[-1]['decode_tokens_per_s']:.0f} tok/s", file=sys.stderr)
    json.dump({"torch": torch.__version__, "transformers": transformers.__version__, "rows": rows},
              sys.stdout)
    print()


if __name__ == "__main__":
    main()
