#!/usr/bin/env python3
"""Per-run times of a `moehub figures` regeneration from its cache folder.

A cache entry written since session 29 holds the run's `wall_s` and `cpu_s`: those are printed.
An older entry holds neither, but its file's modification time is the run's end, and the thread
executor hands runs out in a known order (most expensive first by tokens x top_k x hidden, ties
in cache-key order, src/figures/sweep_runner.cpp): replaying that order on JOBS workers from the
start time gives each run's start, hence its wall time. Runs refused before simulating (no cache
entry) take no time and do not change the replay.

    scripts/regen-timeline.py DIR/cache --start EPOCH_S [--jobs 2] [--estimates FILE --cap GIB]

--start: when the runner began (the log's end time less its summary's seconds). --estimates:
lines "model gpus: system=GiB ..." (the memory estimates of the large runs; others count
0.1 GiB) to replay the runs under a --jobs-memory cap of --cap GiB (same durations).
"""
import argparse
import glob
import json
import os
import re
from collections import defaultdict

# hidden, top_k of the model presets (configs/models/*.toml), for the executor's cost.
MODELS = {'deepseek-v3': (7168, 8), 'qwen3-235b-a22b': (4096, 8), 'mixtral-8x7b': (4096, 2),
          'mixtral-8x22b': (6144, 2), 'phi-3.5-moe': (4096, 2), 'qwen2-moe-2.7b': (2048, 4),
          'qwen1.5-moe-a2.7b': (2048, 4), 'deepseek-v2-lite': (2048, 6), 'olmoe': (2048, 8),
          'dbrx': (6144, 4), 'gpt-oss-120b': (2880, 4), 'qwen3-30b-a3b': (2048, 8)}


def read_runs(cache):
    runs = []
    for f in glob.glob(os.path.join(cache, '*.json')):
        j = json.load(open(f))
        point = j.get('point', '')
        m = re.match(r'(\S+) (\d+) GPUs (\d+) tokens', point)
        model, gpus, tokens = (m.group(1), int(m.group(2)), int(m.group(3))) if m else ('mixtral-8x7b', 0, 0)
        hidden, top_k = MODELS.get(model, (4096, 2))
        runs.append(dict(key=os.path.basename(f), end=os.path.getmtime(f), system=j.get('system'), point=point,
                         model=model, gpus=gpus, cost=tokens * top_k * hidden,
                         wall=j.get('wall_s'), cpu=j.get('cpu_s')))
    return sorted(runs, key=lambda r: (-r['cost'], r['key']))


def replay(runs, start, jobs):
    free = [start] * jobs
    for r in runs:
        w = min(range(jobs), key=lambda i: free[i])
        r['start'] = free[w]
        if r['wall'] is None:
            r['wall'] = r['end'] - r['start']
        free[w] = r['start'] + r['wall']


def simulate_cap(runs, jobs, cap):
    t, running, left, peak = 0.0, [], list(runs), 0.0
    while left or running:
        while len(running) < jobs and left:
            held = sum(r['mem'] for _, r in running)
            k = next((i for i, r in enumerate(left) if not running or held + r['mem'] <= cap), None)
            if k is None:
                break
            running.append((t + left[k]['wall'], left.pop(k)))
        peak = max(peak, sum(r['mem'] for _, r in running))
        running.sort(key=lambda x: x[0])
        t = running.pop(0)[0]
    return t, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('cache')
    ap.add_argument('--start', type=float, required=True)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--estimates')
    ap.add_argument('--cap', type=float)
    a = ap.parse_args()
    runs = read_runs(a.cache)
    replay(runs, a.start, a.jobs)
    negative = [r for r in runs if r['wall'] < -0.5]
    print(f"{len(runs)} runs, {sum(r['wall'] for r in runs):.1f} run-seconds, {len(negative)} negative")
    by_gpus = defaultdict(float)
    for r in runs:
        by_gpus[r['gpus'] if 'h800-cluster' in r['point'] else 'other'] += r['wall']
    for k, v in sorted(by_gpus.items(), key=lambda x: str(x[0])):
        print(f"  {k}: {v:.1f} s")
    for r in runs:
        cpu = '' if r['cpu'] is None else f" cpu {r['cpu']:.1f}"
        print(f"{r['wall']:8.1f} s{cpu}  {r['system']:12s} {r['point']}")
    if a.estimates:
        est = {}
        for line in open(a.estimates):
            head, rest = line.split(':')
            model, gpus = head.split()
            for kv in rest.split():
                system, gib = kv.split('=')
                est[(model, int(gpus), system)] = float(gib)
        for r in runs:
            r['mem'] = est.get((r['model'], r['gpus'], r['system']), 0.1)
        for cap in ([a.cap] if a.cap else []) + [float('inf')]:
            span, peak = simulate_cap(runs, a.jobs, cap)
            print(f"cap {cap} GiB: wall {span:.0f} s, largest estimate in progress {peak:.1f} GiB")


if __name__ == '__main__':
    main()
