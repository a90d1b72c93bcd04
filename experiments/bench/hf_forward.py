#!/usr/bin/env python3
"""experiments/bench/hf_forward.py: the HF transformers side of experiments/bench/forward.lua.

Measures one checkpoint exactly as forward.lua measures it in ltrun: prefill = one forward
pass over batch x prompt random ids with logits for the last position only, the best of
`repeats`; decode = greedy generate of new_tokens tokens (no stop) minus generate of 1 token,
back to back in each repeat, over new_tokens - 1 steps, the best positive difference (none
positive: decode_tokens_per_s is null and the run says so on stderr). Prints one JSON object
{"torch": ..., "transformers": ..., "rows": [{"batch", "prefill_tokens_per_s",
"decode_tokens_per_s"}], "clock": ..., "cache": ...} on stdout.

--clock cpu times this process's CPU time (time.process_time) instead of wall time: on a
shared machine, with OMP_NUM_THREADS=1 on both sides, it is the work done.

A stack of one layer kind (Mamba2 only, attention only, Gated DeltaNet only): transformers
5.12's DynamicCache raises in get_seq_length and get_mask_sizes when it holds no attention layer and in
has_previous_state when it holds no linear-attention (Mamba2 / Gated DeltaNet) layer, so
HF's generate cannot decode such a stack (its forward without a cache runs). For those
stacks generate gets a DynamicCache that answers the two questions itself (tokens seen,
counted by a forward hook; no previous linear state) and is not "compileable" (else generate
asks for a 4D mask of the layer kind, which transformers has only for attention kinds); the
model's computation is HF's own.
Before timing, the first batch's greedy tokens with that cache are checked equal to a greedy
loop of full forwards without a cache. "cache" in the JSON says which cache was used.

  python3 experiments/bench/hf_forward.py MODEL_DIR --batches 1,16,64 --prompt 128 \
      --new-tokens 32 --repeats 2 --device cpu --dtype float32 [--clock wall|cpu]
"""
import argparse
import inspect
import json
import sys
import time

import torch
import transformers
from transformers import AutoModelForCausalLM


def one_kind_cache_class():
    """A DynamicCache for stacks that hold only attention or only linear-attention layers
    (None when this transformers has no such split of cache layers)."""
    try:
        from transformers.cache_utils import CacheLayerMixin, DynamicCache, LinearAttentionCacheLayerMixin
    except ImportError:
        return None

    class OneKindCache(DynamicCache):
        def __init__(self, config):
            super().__init__(config=config)
            self.seen = 0  # tokens through the model, counted by a forward hook (see main)

        def get_seq_length(self, layer_idx=0):
            if not any(isinstance(layer, CacheLayerMixin) for layer in self.layers):
                return self.seen
            return super().get_seq_length(layer_idx)

        def get_mask_sizes(self, query_length, layer_idx=0):  # the attention mask no layer reads
            if not any(isinstance(layer, CacheLayerMixin) for layer in self.layers):
                return self.seen + query_length, 0
            return super().get_mask_sizes(query_length, layer_idx)

        def has_previous_state(self, layer_idx=None):
            if layer_idx is None and not any(isinstance(layer, LinearAttentionCacheLayerMixin) for layer in self.layers):
                return False
            return super().has_previous_state(layer_idx)

        @property
        def is_compileable(self):  # else generate builds a 4D mask by layer kind, which has no "mamba"
            return False

    OneKindCache.kinds = (CacheLayerMixin, LinearAttentionCacheLayerMixin)
    return OneKindCache


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
    ap.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                    help="wall time, or this process's CPU time (time.process_time)")
    args = ap.parse_args()
    if args.new_tokens < 2:
        ap.error("--new-tokens must be at least 2 (decode = tokens 2..n)")

    dtype = getattr(torch, args.dtype)
    key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation=args.attn,
                                                 **{key: dtype}).to(args.device).eval()
    vocab = model.config.vocab_size
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    # a stack of one layer kind needs the OneKindCache (see the docstring)
    cache_class, cache_name = None, "DynamicCache"
    OneKindCache = one_kind_cache_class()
    if OneKindCache is not None:
        probe = OneKindCache(model.config)
        attn, linear = (any(isinstance(layer, k) for layer in probe.layers) for k in OneKindCache.kinds)
        if probe.layers and not (attn and linear):
            cache_class, cache_name = OneKindCache, "OneKindCache"

            def count(module, fargs, fkwargs, out):
                cache = fkwargs.get("past_key_values")
                ids = fkwargs.get("input_ids")
                if isinstance(cache, OneKindCache) and ids is not None:
                    cache.seen += ids.shape[1]
            model.register_forward_hook(count, with_kwargs=True)

    def timed(fn):
        best = float("inf")
        for _ in range(args.repeats):
            sync()
            t0 = clock()
            fn()
            sync()
            best = min(best, clock() - t0)
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
        def generate(n):
            extra = {"past_key_values": cache_class(model.config)} if cache_class else {}
            return model.generate(input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=n,
                                  min_new_tokens=n, eos_token_id=None, pad_token_id=0, **extra)

        def gen(n):
            sync()
            t0 = clock()
            generate(n)
            sync()
            return clock() - t0

        with torch.no_grad():
            if cache_class and not rows:  # the replacement cache decodes what full forwards give
                n = 4
                want = ids
                for _ in range(n):
                    logits = model(input_ids=want, use_cache=False).logits[:, -1]
                    want = torch.cat([want, logits.argmax(-1, keepdim=True)], 1)
                got = generate(n)
                if not torch.equal(got, want):
                    sys.exit(f"hf_forward: {cache_name} decodes {got[:, -n:].tolist()}, full forwards give "
                             f"{want[:, -n:].tolist()}")
            model(input_ids=ids, attention_mask=mask, use_cache=False, **last_only)  # warm-up, untimed
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
    json.dump({"torch": torch.__version__, "transformers": transformers.__version__, "rows": rows,
               "clock": args.clock, "cache": cache_name}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
