# Why do PyTorch's weight-gradient GEMMs run faster than shiftsim-bench's?  Times a few GEMM
# shapes in PyTorch in each operand layout, with the L2 flushed before each run (as the bench
# does) and without, through cuBLAS and through cuBLASLt.  CSV on stdout.
import sys
import torch

dev = "cuda"
shapes = [(4096, 16384, 2048), (16384, 4096, 2048), (4096, 4096, 2048), (2048, 16384, 4096),
          (2048, 4096, 16384), (8192, 8192, 8192)]
flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)


def operands(m, n, k, layout):
    a = torch.randn(k, m, device=dev).to(torch.bfloat16).t() if layout[0] == "T" else \
        torch.randn(m, k, device=dev).to(torch.bfloat16)
    b = torch.randn(n, k, device=dev).to(torch.bfloat16).t() if layout[1] == "T" else \
        torch.randn(k, n, device=dev).to(torch.bfloat16)
    return a, b


def timed(fn, cold, reps=25):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        if cold:
            flush.add_(1)
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1000)
    ts.sort()
    return ts[len(ts) // 2]


libs = ["default"]
if hasattr(torch.backends.cuda, "preferred_blas_library"):
    libs = ["cublas", "cublaslt"]
print("lib,m,n,k,layout,cold_us,warm_us,back_to_back_us")
for lib in libs:
    if lib != "default":
        torch.backends.cuda.preferred_blas_library(lib)
    for (m, n, k) in shapes:
        for layout in ("NN", "NT", "TN"):
            try:
                a, b = operands(m, n, k, layout)
                cold = timed(lambda: torch.mm(a, b), True)
                warm = timed(lambda: torch.mm(a, b), False)
                # back to back: 20 GEMMs between two events, no sync between them
                for _ in range(3):
                    torch.mm(a, b)
                s = torch.cuda.Event(enable_timing=True)
                e = torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(20):
                    torch.mm(a, b)
                e.record()
                e.synchronize()
                b2b = s.elapsed_time(e) * 1000 / 20
                print(f"{lib},{m},{n},{k},{layout},{cold:.1f},{warm:.1f},{b2b:.1f}", flush=True)
            except Exception as ex:
                print(f"# {lib} {m}x{n}x{k} {layout}: {ex}", file=sys.stderr, flush=True)
