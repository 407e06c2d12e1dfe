# The per-iteration work of a mixed-precision training step, kernel class by kernel class, on one
# GPU: what each pass of Megatron-LM's optimizer step (and PyTorch's equivalents) costs per
# parameter, timed with CUDA events, against a plain device-to-device copy of the same bytes.
# The parameters are GPT-J 6B's layers (8 of its 28, with their biases and norms: 1.61 B
# parameters), so the tensors have the sizes and count the multi-tensor kernels really see.
#
# Prints CSV on stdout: phase, bytes_per_param (read + written), median_ms, min_ms, TB_s.
# Megatron-LM's sequence (megatron/optimizer/optimizer.py, Float16OptimizerWithFloat16Params,
# with fp32 main gradients): zero the gradient buffer, the global norm of the fp32 gradients
# (multi_tensor_l2norm), their scaling when clipped (multi_tensor_scale), Adam (apex FusedAdam:
# 4 fp32 tensors read, 3 written), the fp32 weights copied into the 16-bit ones.  torch's
# _foreach kernels and fused AdamW stand in for apex's (the same multi_tensor_apply design).
#
# Second part, sustained load: one large GEMM shape back to back for SUSTAIN_S seconds (default
# 20), timed in blocks of 50 ms; prints TFLOP/s of the first block, the best block and the
# median of the last 5 s, while nvidia-smi samples the SM clock and power (sustained.csv).
import os
import statistics
import subprocess
import sys
import time

import torch

dev = "cuda"
H, FF, LAYERS = 4096, 16384, 8
SUSTAIN_S = float(os.environ.get("SUSTAIN_S", "20"))
if os.environ.get("GPTJ_SMOKE"):  # a tiny run on the CPU, to check the script itself
    dev, H, FF, LAYERS, SUSTAIN_S = "cpu", 64, 256, 2, 1.0
out_dir = sys.argv[1] if len(sys.argv) > 1 else "."


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


def timed(fn, reps=5, warm=2):
    for _ in range(warm):
        fn()
    sync()
    ts = []
    for _ in range(reps):
        if dev == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
        else:
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts)


shapes = []
for _ in range(LAYERS):
    shapes += [(H,), (H,), (3 * H, H), (H, H), (FF, H), (FF,), (H, FF), (H,)]
n = sum(torch.Size(s).numel() for s in shapes)
bf = [torch.randn(s, device=dev, dtype=torch.bfloat16) * 0.02 for s in shapes]
bf_grad = [torch.randn(s, device=dev, dtype=torch.bfloat16) for s in shapes]
master = [p.float() for p in bf]
for mp in master:
    mp.grad = torch.randn_like(mp)
fp32_grad = [mp.grad for mp in master]
flat = torch.zeros(n, device=dev, dtype=torch.float32)  # a contiguous fp32 gradient buffer
src = torch.empty(n * 2, device=dev, dtype=torch.bfloat16)
dst = torch.empty_like(src)
fused = {"fused": True} if dev == "cuda" else {}
opt = torch.optim.AdamW(master, lr=1e-5, betas=(0.9, 0.95), weight_decay=0.1, **fused)

print(f"# {len(shapes)} tensors, {n} parameters, {torch.__version__}", file=sys.stderr, flush=True)
phases = [
    # name, bytes per parameter (read + written), the work
    ("copy d2d (reference)", 8, lambda: dst.copy_(src)),
    ("zero fp32 grad buffer", 4, lambda: flat.zero_()),
    ("norm fp32 grads (foreach)", 4, lambda: torch._foreach_norm(fp32_grad)),
    ("scale fp32 grads (foreach)", 8, lambda: torch._foreach_mul_(fp32_grad, 1.0)),
    ("adamw fused fp32", 28, lambda: opt.step()),
    ("copy fp32 to bf16 (per tensor)", 6, lambda: [t.copy_(m) for t, m in zip(bf, master)]),
    ("norm bf16 grads (foreach)", 2, lambda: torch._foreach_norm(bf_grad)),
    ("scale bf16 grads (foreach)", 4, lambda: torch._foreach_mul_(bf_grad, 1.0)),
    ("bf16 grads to fp32 (per tensor)", 6, lambda: [g.copy_(b) for g, b in zip(fp32_grad, bf_grad)]),
]
if hasattr(torch, "_foreach_copy_"):  # torch >= 2.2
    phases.insert(5, ("copy fp32 to bf16 (foreach)", 6, lambda: torch._foreach_copy_(bf, master)))
print("phase,bytes_per_param,median_ms,min_ms,TB_s")
for name, per, fn in phases:
    med, lo = timed(fn)
    print(f"{name},{per},{med:.3f},{lo:.3f},{per * n / med / 1e9:.3f}", flush=True)
del opt, master, fp32_grad, flat, src, dst, bf, bf_grad
if dev == "cuda":
    torch.cuda.empty_cache()

# Sustained load: one GEMM shape back to back.
M = Nn = K = 8192 if dev == "cuda" else 128
a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
b = torch.randn(K, Nn, device=dev, dtype=torch.bfloat16)
c = torch.empty(M, Nn, device=dev, dtype=torch.bfloat16)
flop = 2 * M * Nn * K
smi = None
if dev == "cuda":
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
         "--format=csv,noheader", "-lms", "200"],
        stdout=open(os.path.join(out_dir, "sustained-smi.csv"), "w"), stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # idle samples first
per_block = 1
torch.matmul(a, b, out=c)
sync()
t0 = time.perf_counter()
torch.matmul(a, b, out=c)
sync()
one = time.perf_counter() - t0
per_block = max(1, int(0.05 / max(one, 1e-6)))
blocks = []
start = time.perf_counter()
while time.perf_counter() - start < SUSTAIN_S:
    t0 = time.perf_counter()
    for _ in range(per_block):
        torch.matmul(a, b, out=c)
    sync()
    blocks.append((time.perf_counter() - start, per_block * flop / (time.perf_counter() - t0) / 1e12))
if smi:
    time.sleep(0.5)
    smi.terminate()
with open(os.path.join(out_dir, "sustained.csv"), "w") as f:
    f.write("t_s,tflops\n")
    for t, r in blocks:
        f.write(f"{t:.3f},{r:.1f}\n")
tail = [r for t, r in blocks if t > SUSTAIN_S - 5]
print(f"sustained,{M}x{Nn}x{K},first {blocks[0][1]:.1f},best {max(r for _, r in blocks):.1f},"
      f"last5s median {statistics.median(tail):.1f} TFLOP/s,{len(blocks)} blocks of {per_block}")
