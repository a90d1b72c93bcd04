#!/usr/bin/env python3
"""experiments/bench/hf_generate.py: the HF transformers side of experiments/bench/grpo.lua.

GRPO's rollout as a researcher would sample it with transformers: `model.generate` on the
batch of prompts with num_return_sequences = G, plain sampling at the given temperature (no
top-k, no top-p, no repetition penalty: the generation config's defaults are overridden), the
same stop ids and the same cap on new tokens. Finished rows stay in HF's batch (padded) until
the longest ends. Tokens counted as ltrun counts them: each row's response up to and including
its first stop id, at most max_new. The repeat with the best tokens/s of `repeats` (each samples
anew, so the counts differ) after an untimed warm-up.

Input: a JSON file {"prompts": [[ids], ...], "stop_ids": [ids]}. Prints one JSON object
{"torch", "transformers", "threads", "seconds", "cpu_seconds", "tokens", "rows"} on stdout.

  python3 experiments/bench/hf_generate.py MODEL_DIR INPUT.json --group_size 8 --max_new 128 \
      [--device cuda --dtype float32]
"""
import argparse
import json
import time

import torch
import transformers
from transformers import AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("--group_size", type=int, default=8)
    ap.add_argument("--max_new", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--attn", default="sdpa")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    args = ap.parse_args()

    with open(args.input) as f:
        spec = json.load(f)
    prompts, stops = spec["prompts"], spec["stop_ids"]
    if not prompts or len({len(p) for p in prompts}) != 1:
        raise SystemExit("hf_generate.py: the prompts must be non-empty and of one length (no padding here)")
    key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation=args.attn,
                                                 **{key: getattr(torch, args.dtype)}).to(args.device).eval()
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    input_ids = torch.tensor(prompts, dtype=torch.long, device=args.device)
    stop_set = set(stops)
    gen = dict(do_sample=True, temperature=args.temperature, top_k=0, top_p=1.0, repetition_penalty=1.0,
               num_return_sequences=args.group_size, max_new_tokens=args.max_new, min_new_tokens=0,
               eos_token_id=list(stops) if stops else None,
               pad_token_id=stops[0] if stops else 0)

    def run():
        with torch.inference_mode():
            out = model.generate(input_ids, attention_mask=torch.ones_like(input_ids), **gen)
        new = out[:, input_ids.shape[1]:].tolist()
        tokens = 0
        for row in new:
            n = len(row)
            for j, t in enumerate(row):
                if t in stop_set:
                    n = j + 1
                    break
            tokens += n
        return tokens, len(new)

    torch.manual_seed(args.seed)
    run()  # warm-up, untimed
    best = None
    for _ in range(args.repeats):
        sync()
        t0, c0 = time.perf_counter(), time.process_time()
        tokens, rows = run()
        sync()
        t, c = time.perf_counter() - t0, time.process_time() - c0
        if best is None or tokens / t > best["tokens"] / best["seconds"]:
            best = {"seconds": t, "cpu_seconds": c, "tokens": tokens, "rows": rows}
    best.update({"torch": torch.__version__, "transformers": transformers.__version__,
                 "threads": torch.get_num_threads()})
    print(json.dumps(best))


if __name__ == "__main__":
    main()
