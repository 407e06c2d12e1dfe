# A whole GPT-J 6B training step on one GPU, in PyTorch, the way Megatron-LM runs mixed precision:
# bf16 weights and gradients, fp32 master weights and AdamW moments (fused AdamW on the master
# copy), gradients accumulated over `m` microbatches of one 2048-token sequence, then the global
# gradient norm (clip 1.0), the optimizer step and the bf16 copy of the master weights.
# Prints CSV on stdout: m, phase, median_ms, min_ms.  Also writes a Kineto trace of one layer's
# forward and backward (argv[1], gzip) and a kernel table (argv[2]).
import gzip
import os
import sys
import time

import torch
import torch.nn.functional as F

import importlib.util  # noqa: E402

# The layer of gpt-j-layer-torch.py, beside this file.
_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("gptj_layer", os.path.join(_here, "gpt-j-layer-torch.py"))
L = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(L)

dev = L.dev
H, FF, S, V, NL = L.H, L.FF, L.S, 50400, 28
if dev == "cpu":
    V, NL = 512, 2


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()
dt = torch.bfloat16


def param(*shape, scale=0.02):
    return (torch.randn(*shape, device=dev, dtype=torch.float32) * scale).to(dt).requires_grad_()


def build():
    layers = [L.make(1000 + i) for i in range(NL)]
    top = {
        "wte": param(V, H),
        "lnf_w": torch.ones(H, device=dev, dtype=dt, requires_grad=True),
        "lnf_b": torch.zeros(H, device=dev, dtype=dt, requires_grad=True),
        "head": param(V, H),
        "head_b": torch.zeros(V, device=dev, dtype=dt, requires_grad=True),
    }
    return layers, top


def forward_loss(layers, top, ids, impl):
    x = F.embedding(ids, top["wte"])
    for p in layers:
        x = L.layer(p, x, impl)
    x = F.layer_norm(x, (H,), top["lnf_w"], top["lnf_b"])
    logits = F.linear(x, top["head"], top["head_b"])
    return F.cross_entropy(logits.float().view(-1, V), ids.view(-1))


def main():
    trace_path, table_path = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    # One layer's forward and backward under the profiler: the kernels PyTorch really runs.
    p = L.make(7)
    x = torch.randn(1, S, H, device=dev, dtype=torch.float32).to(dt).requires_grad_()
    dy = torch.randn(1, S, H, device=dev, dtype=torch.float32).to(dt)
    impls = ("gemm-softmax", "sdpa") if hasattr(F, "scaled_dot_product_attention") else ("gemm-softmax",)
    for impl in impls:
        for _ in range(3):
            L.layer(p, x, impl).backward(dy)
    sync()
    acts = [torch.profiler.ProfilerActivity.CPU]
    if dev == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        for impl in impls:
            for _ in range(2):
                with torch.profiler.record_function("layer." + impl):
                    L.layer(p, x, impl).backward(dy)
                sync()
    prof.export_chrome_trace("/tmp/layer-trace.json")
    with open("/tmp/layer-trace.json", "rb") as f, gzip.open(trace_path, "wb") as g:
        g.write(f.read())
    with open(table_path, "w") as f:
        f.write(prof.key_averages().table(sort_by="cuda_time_total", row_limit=60))
    del p, x, dy, prof
    torch.cuda.empty_cache()
    print("# layer trace written", file=sys.stderr, flush=True)

    layers, top = build()
    params = [t for p in layers for t in p.values()] + list(top.values())
    n_params = sum(t.numel() for t in params)
    print(f"# parameters {n_params}", file=sys.stderr, flush=True)
    master = [t.detach().float().clone() for t in params]
    fused = {"fused": True} if dev == "cuda" else {}
    opt = torch.optim.AdamW(master, lr=1e-5, betas=(0.9, 0.95), weight_decay=0.1, **fused)
    print("impl,m,phase,median_ms,min_ms,peak_GiB")
    for impl in impls[::-1]:
        for m in (1, 4):
            try:
                times = {"fwd+bwd": [], "optimizer": [], "step": []}
                for it in range(5):
                    sync()
                    t0 = time.perf_counter()
                    for _ in range(m):
                        ids = torch.randint(0, V, (1, S), device=dev)
                        forward_loss(layers, top, ids, impl).backward()
                    sync()
                    t1 = time.perf_counter()
                    grads = [t.grad for t in params]
                    norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
                    for mp, g in zip(master, grads):
                        mp.grad = g.float()
                    opt.step()
                    with torch.no_grad():
                        for t, mp in zip(params, master):
                            t.copy_(mp)
                            t.grad = None
                        for mp in master:
                            mp.grad = None
                    sync()
                    t2 = time.perf_counter()
                    if it >= 2:  # two warm-up steps
                        times["fwd+bwd"].append(1e3 * (t1 - t0))
                        times["optimizer"].append(1e3 * (t2 - t1))
                        times["step"].append(1e3 * (t2 - t0))
                    del norm
                peak = torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else 0.0
                for k, v in times.items():
                    v.sort()
                    print(f"{impl},{m},{k},{v[len(v) // 2]:.2f},{v[0]:.2f},{peak:.1f}", flush=True)
            except Exception as e:  # one case (out of memory, say) must not lose the others
                print(f"# {impl} m {m}: {e}", file=sys.stderr, flush=True)
                for t in params + master:
                    t.grad = None
                if dev == "cuda":
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
