#!/usr/bin/env python3
"""Per-SM view of the GEMVs of a kernel-timeline probe file (docs/probes/README.md): for each GEMV
kernel and shape of the last full step, medians over its instances (layers) of: CTAs, SMs used,
SMs that ran one CTA and SMs that ran two or more, span (first CTA start to last CTA end), the
mean CTA time from its PDL release (or start) to its exit on SMs of one CTA ("dur@1") and of two
or more ("dur@2+"), how long before the kernel's end the SMs of one CTA went idle ("idle@1", the
median of their CTAs' ends), and the spread of CTA ends (µs).

Why (round 55): the 7B F16 down projection runs 224 CTAs in 264 CTA slots at 84% of the H200's
read bandwidth and 92% of the H100's. If an SM's bandwidth is capped, its SMs with one CTA finish
early (idle@1 large, dur@1 below dur@2+) and the kernel's time is set by those with two.

Usage: sm_balance.py FILE
"""
import collections
import sys

import numpy as np

DT = np.dtype([('t0', '<u8'), ('tw', '<u8'), ('t1', '<u8'), ('m1', '<u8'), ('m2', '<u8'),
               ('tag', '<u4'), ('block', '<u4'), ('rows', '<u4'), ('cols', '<u4'), ('sm', '<u4'),
               ('grid', '<u4')])
NAMES = {2: 'direct', 4: 'stream', 7: 'stream-tiled', 8: 'ring', 9: 'ring-tiled'}
EMBEDDING = 14  # a step's first kernel


def instances(path):
    """Consecutive records of one (tag, rows, cols, grid), in start order: one kernel each."""
    r = np.fromfile(path, dtype=DT)
    r = r[np.argsort(r['t0'], kind='stable')]
    out = []
    for x in r:
        key = (int(x['tag']), int(x['rows']), int(x['cols']), int(x['grid']))
        if not out or out[-1][0] != key:
            out.append((key, []))
        out[-1][1].append(x)
    return [(k, np.array(v, dtype=DT)) for k, v in out]


def summarize(path):
    ins = instances(path)
    steps = [i for i, (k, _) in enumerate(ins) if k[0] == EMBEDDING]
    if len(steps) < 2:
        sys.exit(f"{path}: no full step (fewer than two embedding kernels)")
    agg = collections.OrderedDict()
    for key, x in ins[steps[-2]:steps[-1]]:
        if key[0] not in NAMES:
            continue
        end, start = int(x['t1'].max()), int(x['t0'].min())
        per_sm = collections.Counter(int(v) for v in x['sm'])
        many = np.array([per_sm[int(v)] >= 2 for v in x['sm']])
        busy = (x['t1'].astype(np.int64) - np.maximum(x['tw'], x['t0']).astype(np.int64)) / 1e3
        d = agg.setdefault(key, collections.defaultdict(list))
        d['ctas'].append(len(x))
        d['sms'].append(len(per_sm))
        d['sm1'].append(sum(1 for c in per_sm.values() if c == 1))
        d['sm2'].append(sum(1 for c in per_sm.values() if c >= 2))
        d['span'].append((end - start) / 1e3)
        if (~many).any():
            d['dur1'].append(float(busy[~many].mean()))
            d['idle1'].append((end - float(np.median(x['t1'][~many]))) / 1e3)
        if many.any():
            d['dur2'].append(float(busy[many].mean()))
        d['espread'].append((end - int(x['t1'].min())) / 1e3)
    print(f"{'kernel':32s} {'n':>3s} {'ctas':>5s} {'SMs':>4s} {'1/SM':>5s} {'2+/SM':>5s} "
          f"{'span':>7s} {'dur@1':>7s} {'dur@2+':>7s} {'idle@1':>7s} {'espread':>7s}")
    for key, d in agg.items():
        def m(k):
            return float(np.nanmedian(d[k])) if d[k] else float('nan')
        label = f"{NAMES[key[0]]} {key[1]}x{key[2]} g{key[3]}"
        print(f"{label:32s} {len(d['ctas']):3d} {m('ctas'):5.0f} {m('sms'):4.0f} {m('sm1'):5.0f} "
              f"{m('sm2'):5.0f} {m('span'):7.2f} {m('dur1'):7.2f} {m('dur2'):7.2f} "
              f"{m('idle1'):7.2f} {m('espread'):7.2f}")


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        summarize(p)
