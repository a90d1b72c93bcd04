#!/usr/bin/env python3
"""experiments/bench/hf_layer_tracer.py: the HF transformers side of experiments/bench/layer_tracer.lua.

The LayerTracer scan as a researcher would write it with transformers, batched: per batch of
left-padded samples, one clean pass (output_hidden_states, logits of the last position only)
and the logit lens of every residual at the last token (P_t); then, for every residual r, one
full forward with a forward hook that zeroes the context positions in that residual (r = 0:
the embeddings' output, r = l + 1: block l's output), logits of the last position only, and
JS(P || Q) on the union of the two top-k sets, renormalised there (float32). The best of
`repeats` wall times over all samples (after an untimed warm-up on one sample), and every
sample's P_t and JS so that the caller can compare the values with its own.

Input: a JSON file [{"ids": [...], "context": [0-based positions], "target": id}, ...].
Prints one JSON object {"torch", "transformers", "seconds", "samples": [{"p_target": [N+1],
"js": [N+1], "argmax"}]} on stdout.

  python3 experiments/bench/hf_layer_tracer.py MODEL_DIR SAMPLES.json --batch 8 --topk 10 --repeats 2
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
    ap.add_argument("samples")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--topk", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--attn", default="sdpa")
    args = ap.parse_args()

    with open(args.samples) as f:
        samples = json.load(f)
    key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation=args.attn,
                                                 **{key: torch.float32}).eval()
    layers = model.model.layers
    N = len(layers)
    norm, head = model.model.norm, model.lm_head
    params = inspect.signature(model.forward).parameters
    last_only = ({"logits_to_keep": 1} if "logits_to_keep" in params else
                 {"num_logits_to_keep": 1} if "num_logits_to_keep" in params else {})

    def js_topk(p_logits, q_logits, k):
        p, q = p_logits.softmax(-1), q_logits.softmax(-1)
        keep = torch.zeros_like(p, dtype=torch.bool)
        keep.scatter_(-1, p.topk(k, -1).indices, True)
        keep.scatter_(-1, q.topk(k, -1).indices, True)
        p = torch.where(keep, p, 0.0)
        q = torch.where(keep, q, 0.0)
        p = p / p.sum(-1, keepdim=True)
        q = q / q.sum(-1, keepdim=True)
        m = (p + q) / 2
        return 0.5 * (torch.xlogy(p, p) - torch.xlogy(p, m)).sum(-1) + \
            0.5 * (torch.xlogy(q, q) - torch.xlogy(q, m)).sum(-1)

    def zero_hook(zero):
        def hook(module, inputs, output):
            h = output[0] if isinstance(output, tuple) else output
            h = h.masked_fill(zero.unsqueeze(-1), 0)
            return (h,) + tuple(output[1:]) if isinstance(output, tuple) else h
        return hook

    def scan(items):
        out = []
        for start in range(0, len(items), args.batch):
            chunk = items[start:start + args.batch]
            B, T = len(chunk), max(len(s["ids"]) for s in chunk)
            ids = torch.zeros(B, T, dtype=torch.long)
            mask = torch.zeros(B, T, dtype=torch.long)
            zero = torch.zeros(B, T, dtype=torch.bool)
            for i, s in enumerate(chunk):
                off = T - len(s["ids"])
                ids[i, off:] = torch.tensor(s["ids"])
                mask[i, off:] = 1
                for c in s["context"]:
                    zero[i, off + c] = True
            target = torch.tensor([s["target"] for s in chunk])
            with torch.no_grad():
                clean = model(input_ids=ids, attention_mask=mask, output_hidden_states=True,
                              use_cache=False, **last_only)
                P = clean.logits[:, -1].float()
                # hidden_states[N] is after the final norm in HF: the lens of the last residual
                # is the model's logits
                lens = [head(norm(clean.hidden_states[r][:, -1])).float() for r in range(N)] + [P]
                pt = torch.stack([l.softmax(-1).gather(1, target[:, None])[:, 0] for l in lens], 1)
                js = []
                for r in range(N + 1):
                    module = model.model.embed_tokens if r == 0 else layers[r - 1]
                    handle = module.register_forward_hook(zero_hook(zero))
                    try:
                        q = model(input_ids=ids, attention_mask=mask, use_cache=False, **last_only)
                    finally:
                        handle.remove()
                    js.append(js_topk(P, q.logits[:, -1].float(), args.topk))
                js = torch.stack(js, 1)
            for i in range(B):
                out.append({"p_target": pt[i].tolist(), "js": js[i].tolist(), "argmax": int(P[i].argmax())})
        return out

    scan(samples[:1])  # warm-up, untimed, as on the ltrun side
    best, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(args.repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        result = scan(samples)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)  # this process's CPU time, as os.clock on the ltrun side
    print(f"hf layer tracer: {len(samples)} samples in {best:.3f} s ({len(samples) / best:.2f} samples/s)",
          file=sys.stderr)
    json.dump({"torch": torch.__version__, "transformers": transformers.__version__, "seconds": best, "cpu_seconds": best_cpu,
               "cpu_capability": getattr(torch.backends.cpu, "get_cpu_capability", lambda: "")(),
               "threads": torch.get_num_threads(),
               "samples": result}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
