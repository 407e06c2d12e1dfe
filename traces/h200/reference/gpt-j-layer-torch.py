# One GPT-J 6B decoder layer (parallel block) on one GPU, forward and backward, timed with CUDA
# events: a reference measured apart from shiftsim-bench's per-kernel rows, to check the
# simulator's per-layer sum.  Prints CSV on stdout.
import os
import sys
import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
H, NH, FF, S = 4096, 16, 16384, 2048
if os.environ.get("GPTJ_SMOKE"):  # a tiny run on the CPU, to check the script itself
    dev, H, NH, FF, S = "cpu", 64, 4, 256, 32
HD = H // NH
dt = torch.bfloat16


def make(seed):
    g = torch.Generator(device=dev).manual_seed(seed)
    def w(*shape):
        return (torch.randn(*shape, generator=g, device=dev, dtype=torch.float32) * 0.02).to(dt).requires_grad_()
    return {
        "ln_w": torch.ones(H, device=dev, dtype=dt, requires_grad=True),
        "ln_b": torch.zeros(H, device=dev, dtype=dt, requires_grad=True),
        "qkv": w(3 * H, H),
        "out": w(H, H),
        "up": w(FF, H), "up_b": torch.zeros(FF, device=dev, dtype=dt, requires_grad=True),
        "down": w(H, FF), "down_b": torch.zeros(H, device=dev, dtype=dt, requires_grad=True),
    }


def attention(q, k, v, impl):
    if impl == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / HD ** 0.5)
    mask = torch.ones(S, S, device=dev, dtype=torch.bool).triu(1)
    p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
    return torch.matmul(p, v)


def layer(p, x, impl):
    b = x.shape[0]
    h = F.layer_norm(x, (H,), p["ln_w"], p["ln_b"])
    qkv = F.linear(h, p["qkv"]).view(b, S, 3, NH, HD).permute(2, 0, 3, 1, 4)
    a = attention(qkv[0], qkv[1], qkv[2], impl).transpose(1, 2).reshape(b, S, H)
    a = F.linear(a, p["out"])
    m = F.linear(F.gelu(F.linear(h, p["up"], p["up_b"]), approximate="tanh"), p["down"], p["down_b"])
    return x + a + m


def timed(fn, n=20, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1000.0)
    ts.sort()
    return ts[len(ts) // 2], ts[0]


def main():
    print("impl,microbatch,pass,median_us,min_us")
    p = make(1)
    for impl in ("gemm-softmax", "sdpa"):
        for mb in (1, 2, 4):
            try:
                x = (torch.randn(mb, S, H, device=dev, dtype=torch.float32)).to(dt).requires_grad_()
                dy = torch.randn(mb, S, H, device=dev, dtype=torch.float32).to(dt)
                with torch.no_grad():
                    med, mn = timed(lambda: layer(p, x, impl))
                print(f"{impl},{mb},fwd,{med:.1f},{mn:.1f}", flush=True)

                def fb():
                    y = layer(p, x, impl)
                    y.backward(dy)
                med2, mn2 = timed(fb)
                print(f"{impl},{mb},fwd+bwd,{med2:.1f},{mn2:.1f}", flush=True)
                del x, dy
                torch.cuda.empty_cache()
            except Exception as e:  # one case failing must not lose the others
                print(f"# {impl} mb {mb}: {e}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
