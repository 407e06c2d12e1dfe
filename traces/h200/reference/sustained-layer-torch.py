# How much of a burst's speed a training-like load keeps on one GPU: work of each kind repeated
# for SUSTAIN_S seconds (default 15) after two idle seconds, in blocks of about 50 ms timed with
# CUDA events (ms: per repetition), while nvidia-smi samples the SM clock and power every 100 ms.
#   layer: one GPT-J 6B decoder layer's forward and backward (gpt-j-layer-torch.py beside this
#          file, flash attention): GEMMs, attention and the memory-bound kernels of a real step;
#   gemm:  GPT-J's MLP-up GEMM alone, 2048 x 16384 x 4096 bf16.
# Writes sustained-layer.csv (kind, t_s, ms) and sustained-layer-smi.csv to argv[1]; prints per
# kind the first repetition, the best of the first 50 ms, and the median of the last 5 s.
import importlib.util
import os
import statistics
import subprocess
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("gptj_layer", os.path.join(here, "gpt-j-layer-torch.py"))
L = importlib.util.module_from_spec(spec)
spec.loader.exec_module(L)
dev = L.dev
SUSTAIN_S = float(os.environ.get("SUSTAIN_S", "15"))
if dev == "cpu":
    SUSTAIN_S = 1.0
out_dir = sys.argv[1] if len(sys.argv) > 1 else "."


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


p = L.make(7)
x = torch.randn(1, L.S, L.H, device=dev, dtype=torch.float32).to(L.dt).requires_grad_()
dy = torch.randn(1, L.S, L.H, device=dev, dtype=torch.float32).to(L.dt)
a = torch.randn(2048, L.H, device=dev, dtype=L.dt)
w = torch.randn(L.FF, L.H, device=dev, dtype=L.dt)
impl = "sdpa" if hasattr(torch.nn.functional, "scaled_dot_product_attention") else "gemm-softmax"
kinds = {
    "layer": lambda: L.layer(p, x, impl).backward(dy),
    "gemm": lambda: torch.matmul(a, w.t()),
}
for fn in kinds.values():  # compile and warm the libraries, then let the GPU idle
    for _ in range(3):
        fn()
sync()

smi = None
if dev == "cuda":
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
         "--format=csv,noheader", "-lms", "100"],
        stdout=open(os.path.join(out_dir, "sustained-layer-smi.csv"), "w"),
        stderr=subprocess.DEVNULL)
rows = []
for kind, fn in kinds.items():
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    per_block = max(1, int(0.05 / max(time.perf_counter() - t0, 1e-6)))
    time.sleep(2.0)  # idle: the clocks recover
    sync()
    start = time.perf_counter()
    while time.perf_counter() - start < SUSTAIN_S:
        # Blocks of about 50 ms queued without a pause (the host runs ahead), timed between
        # CUDA events: the GPU is never left waiting for the next launch.
        if dev == "cuda":
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(per_block):
                fn()
            e1.record()
            e1.synchronize()
            ms = e0.elapsed_time(e1) / per_block
        else:
            t0 = time.perf_counter()
            for _ in range(per_block):
                fn()
            ms = (time.perf_counter() - t0) * 1e3 / per_block
        rows.append((kind, time.perf_counter() - start, ms))
if smi:
    time.sleep(0.3)
    smi.terminate()
with open(os.path.join(out_dir, "sustained-layer.csv"), "w") as f:
    f.write("kind,t_s,ms\n")
    for k, t, ms in rows:
        f.write(f"{k},{t:.4f},{ms:.4f}\n")
print("kind,first_block_ms,median_last_5s_ms,ratio")
for kind in kinds:
    r = [(t, ms) for k, t, ms in rows if k == kind]
    first = r[0][1]
    tail = statistics.median(ms for t, ms in r if t >= SUSTAIN_S - 5)
    print(f"{kind},{first:.3f},{tail:.3f},{first / tail:.3f}", flush=True)
