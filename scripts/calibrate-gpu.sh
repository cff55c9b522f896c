#!/usr/bin/env bash
# Measures, on the GPU this runs on (meant for an H200 lent through the device tool), what the
# GPU model's datasheet constants stand in for:
#   - bf16 GEMM throughput over a shape grid (torch.matmul, i.e. cuBLAS),
#   - bf16 grouped-GEMM throughput (torch._grouped_mm when present, else equal-size bmm),
#   - HBM copy bandwidth (a device-to-device copy of a few GB),
#   - host costs as PyTorch sees them (async launch of a tiny op; 4 B D2H copy + sync),
# and writes them to configs/calibration/h200.toml (or --out FILE). Never needed for the build
# or the tests. Takes a few minutes; --quick runs a smaller grid.
#
# Usage: scripts/calibrate-gpu.sh [--out FILE] [--quick]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/../configs/calibration/h200.toml"
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "calibrate-gpu.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

if ! command -v python3 >/dev/null; then
  echo "calibrate-gpu.sh: python3 not found" >&2; exit 1
fi
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "calibrate-gpu.sh: needs python3 with PyTorch and a CUDA GPU" >&2; exit 1
fi

mkdir -p "$(dirname "$out")"
PYTHONUNBUFFERED=1 CAL_OUT="$out" CAL_QUICK="$quick" python3 - <<'PY'
import datetime, os, statistics, time
import torch

out = os.environ["CAL_OUT"]
quick = os.environ["CAL_QUICK"] == "1"
dev = torch.device("cuda")
props = torch.cuda.get_device_properties(dev)
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
torch.manual_seed(0)

def time_cuda(fn, warmup=3, reps=10):
    """Median of `reps` CUDA-event timings of fn(), in microseconds, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(times)

lines = []
def emit(s=""):
    lines.append(s)

emit("# Measured by scripts/calibrate-gpu.sh; not a preset (the config loader never reads this folder).")
emit(f'description = "Calibration of the GPU model on {props.name}"')
emit(f'device = "{props.name}"')
emit(f"sm_count = {props.multi_processor_count}")
emit(f'torch = "{torch.__version__}"')
emit(f'cuda = "{torch.version.cuda}"')
emit(f'measured = "{datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}"')
emit('method = "median of 10 CUDA-event timings after 3 warm-ups; random normal bf16 data"')

# --- HBM copy bandwidth ---
n = (1 << 30) if not quick else (1 << 28)          # bf16 elements: 2 GiB (quick: 512 MiB)
src = torch.randn(n, device=dev, dtype=torch.bfloat16)
dst = torch.empty_like(src)
us = time_cuda(lambda: dst.copy_(src))
moved = 2 * n * 2                                   # read + write
emit()
emit("[hbm]")
emit(f"copy_bytes = {moved}")
emit(f"copy_time_us = {us:.3f}")
emit(f'copy_bandwidth = "{moved / us / 1e6:.3f}TB/s"  # bytes read + written / time')
print(f"hbm copy: {moved / us / 1e6:.3f} TB/s", flush=True)
del src, dst
torch.cuda.empty_cache()

# --- dense GEMM grid ---
ms = [128, 512, 2048, 8192] if quick else [128, 256, 512, 1024, 2048, 4096, 8192]
nks = [(4096, 4096), (8192, 8192)] if quick else [(4096, 4096), (8192, 8192), (28672, 4096), (4096, 14336)]
emit()
emit("# C[m x n] = A[m x k] @ B[k x n], bf16 in and out (torch.matmul -> cuBLAS)")
for (nn, k) in nks:
    b = torch.randn(k, nn, device=dev, dtype=torch.bfloat16)
    for m in ms:
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        us = time_cuda(lambda: torch.matmul(a, b))
        tf = 2.0 * m * nn * k / us / 1e6
        emit("[[gemm]]")
        emit(f"m = {m}\nn = {nn}\nk = {k}\ntime_us = {us:.3f}\ntflops = {tf:.1f}")
        print(f"gemm {m}x{nn}x{k}: {us:.1f} us, {tf:.1f} TFLOPS", flush=True)
    del a, b
torch.cuda.empty_cache()

# --- grouped GEMM grid (the expert GEMMs: each group its own weights) ---
grouped_mm = getattr(torch, "_grouped_mm", None)
groups = [8] if quick else [8, 32]
rows = [16, 128, 512] if quick else [16, 64, 128, 512, 1024]
gnks = [(28672, 4096)] if quick else [(28672, 4096), (4096, 14336), (2816, 2048)]
emit()
emit("# groups x ([m x k] @ [k x n]); method: torch._grouped_mm (one kernel) or bmm (equal groups)")
for g in groups:
    for (nn, k) in gnks:
        if g * nn * k * 2 > 16e9:
            continue  # keep the weights within a few GB
        w = torch.randn(g, k, nn, device=dev, dtype=torch.bfloat16)
        for m in rows:
            x = torch.randn(g * m, k, device=dev, dtype=torch.bfloat16)
            method = "bmm"
            fn = lambda: torch.bmm(x.view(g, m, k), w)
            if grouped_mm is not None:
                offs = torch.arange(m, g * m + 1, m, device=dev, dtype=torch.int32)
                wt = w.transpose(-2, -1).contiguous().transpose(-2, -1)  # column-major B as the kernel wants
                try:
                    grouped_mm(x, wt, offs=offs)
                    fn = lambda: grouped_mm(x, wt, offs=offs)
                    method = "torch._grouped_mm"
                except Exception as e:  # older builds or unsupported layouts
                    print(f"_grouped_mm unavailable ({e}); using bmm", flush=True)
            us = time_cuda(fn)
            tf = 2.0 * g * m * nn * k / us / 1e6
            emit("[[grouped_gemm]]")
            emit(f'groups = {g}\nm_per_group = {m}\nn = {nn}\nk = {k}\nmethod = "{method}"\ntime_us = {us:.3f}\ntflops = {tf:.1f}')
            print(f"grouped {g}x({m}x{nn}x{k}) [{method}]: {us:.1f} us, {tf:.1f} TFLOPS", flush=True)
            del x
        del w
        torch.cuda.empty_cache()

# --- host costs as PyTorch sees them (framework-inclusive: upper bounds for host.*) ---
t = torch.zeros(1, device=dev)
for _ in range(100):
    t.add_(1)
torch.cuda.synchronize()
reps = 2000
c0 = time.perf_counter()
for _ in range(reps):
    t.add_(1)
c1 = time.perf_counter()
torch.cuda.synchronize()
issue_us = (c1 - c0) / reps * 1e6
host = torch.empty(1, dtype=torch.int32, pin_memory=True)
small = torch.ones(1, device=dev, dtype=torch.int32)
rt = []
for _ in range(200):
    s0 = time.perf_counter()
    host.copy_(small, non_blocking=True)
    torch.cuda.current_stream().synchronize()
    rt.append((time.perf_counter() - s0) * 1e6)
emit()
emit("[host]")
emit(f"launch_issue_us = {issue_us:.3f}  # CPU time per async launch of a one-element add_, PyTorch dispatch included")
emit(f"d2h_sync_us = {statistics.median(rt):.3f}  # median: 4 B pinned D2H copy + stream synchronize on an idle GPU")
emit(f"d2h_sync_min_us = {min(rt):.3f}")
print(f"host: launch {issue_us:.2f} us, 4 B D2H + sync {statistics.median(rt):.2f} us", flush=True)

with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {out}", flush=True)
PY
