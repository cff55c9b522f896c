#!/usr/bin/env python3
"""Converts XLA's measured sm_90 matmul table into a moehub GEMM calibration file.

Input: a CSV `b,m,n,k,bf16_flops` transcribed from tensorflow/tensorflow
third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h (kDefaultMatmulPTable, key
"sm_90", dtype "bf16xbf16->bf16"; commit given on the command line). Each entry is a batched
GEMM of b x (m x n x k) at the measured FLOP/s; time = 2 b m n k / flops. b = 1 becomes a
[[gemm]], b > 1 a [[grouped_gemm]] of b equal groups (configs/calibration/README.md).

Usage: scripts/xla-gemm-table.py TABLE.csv COMMIT > configs/calibration/xla-sm90.toml
"""
import csv
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    rows = list(csv.DictReader(open(sys.argv[1])))
    commit = sys.argv[2]
    out = sys.stdout
    out.write("# Measured bf16 GEMM throughput on sm_90 (H100), as XLA ships it for its cost model:\n")
    out.write("# tensorflow/tensorflow third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h,\n")
    out.write(f"# kDefaultMatmulPTable, key \"sm_90\", \"bf16xbf16->bf16\", commit {commit}.\n")
    out.write("# (transcribed from the ROCm/xla@b2766086 copy of the file, of the same 79026 bytes, with\n")
    out.write("# entries spot-checked against the tensorflow copy; 375 entries, every (b, m, n, k) once).\n")
    out.write("# Converted by scripts/xla-gemm-table.py: time_us = 2 b m n k / flops; b > 1 (a batched\n")
    out.write("# GEMM of b equal problems) is a [[grouped_gemm]] of b groups. Shapes: b in {1, 2, 4},\n")
    out.write("# m, n, k in 256..4096. Use: --set gpu.gemm_model=calibrated\n")
    out.write("# --set gpu.gemm_calibration=configs/calibration/xla-sm90.toml (docs/gpu.md).\n")
    out.write('device = "sm_90 (H100), XLA default matmul performance table"\n')
    out.write(f'source = "tensorflow/tensorflow@{commit}:third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h"\n')
    for r in rows:
        b, m, n, k, flops = (int(r[c]) for c in ("b", "m", "n", "k", "bf16_flops"))
        time_us = 2.0 * b * m * n * k / flops * 1e6
        if b == 1:
            out.write(f"\n[[gemm]]\nm = {m}\nn = {n}\nk = {k}\ntime_us = {time_us:.4f}\n")
        else:
            out.write(f"\n[[grouped_gemm]]\ngroups = {b}\nm_per_group = {m}\nn = {n}\nk = {k}\ntime_us = {time_us:.4f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
