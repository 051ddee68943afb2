#!/usr/bin/env python3
"""Summarises a kernel-timeline probe file (docs/probes/README.md): per kernel of the last full
step, medians over the layers of the CTA count, first CTA start to last CTA end ("span"), first
PDL release to last end ("rel->end"), previous kernel's end to first release ("dep"), previous
kernel's end to this one's end ("e-e"), spread of CTA starts and ends (µs). Then, against the
kernel's producer (the last kernel before it that is not a split, prepare_x: for a GEMV on a
pre-split x' the kernel that wrote x; for V on the [Wq; Wk] GEMV's split, that GEMV): how long before the producer's end its first CTA started
("pre", negative: after), how many of its CTAs started before that end ("early"), and the
producer's end to this kernel's first PDL release ("p-rel": the boundary's chain, the split
included).

Usage: kernel_timeline.py FILE [FILE ...]
"""
import sys, numpy as np, collections
dt = np.dtype([('t0','<u8'),('tw','<u8'),('t1','<u8'),('m1','<u8'),('m2','<u8'),('tag','<u4'),('block','<u4'),('rows','<u4'),('cols','<u4'),('sm','<u4'),('grid','<u4')])
NAMES={1:'staged',2:'direct',3:'mma',4:'stream',5:'tiled',7:'stream-tiled',8:'ring',9:'ring-tiled',10:'attention',11:'att-combine',12:'argmax1',13:'argmax2',14:'embedding',15:'prepare_x'}
def load(path):
    r = np.fromfile(path, dtype=dt)
    r = r[np.argsort(r['t0'], kind='stable')]
    inst = []
    cur = None
    for x in r:
        key = (int(x['tag']), int(x['rows']) if x['tag'] != 10 else 0, int(x['cols']), int(x['grid']))
        if cur is None or cur['key'] != key:
            cur = {'key': key, 'recs': []}
            inst.append(cur)
        cur['recs'].append(x)
    out = []
    for k in inst:
        a = np.array(k['recs'], dtype=dt)
        tw = a['tw'][a['tw'] > 0]
        out.append(dict(key=k['key'], n=len(a), t0s=np.sort(a['t0']), s=int(a['t0'].min()), wmin=int(tw.min()) if len(tw) else 0,
                        wmax=int(tw.max()) if len(tw) else 0, e=int(a['t1'].max()), emin=int(a['t1'].min()),
                        s_last=int(a['t0'].max())))
    return out
def name(key):
    t, rows, cols, grid = key
    n = NAMES.get(t, str(t))
    return f"{n} {rows}x{cols} g{grid}" if t in (1,2,3,4,5,7,8,9) else f"{n} g{grid}"
def summarize(path):
    ins = load(path)
    steps = [i for i, x in enumerate(ins) if x['key'][0] == 14]
    print(f"== {path}: {len(ins)} kernel instances, {len(steps)} steps")
    for si in range(len(steps)):
        a = steps[si]; b = steps[si+1] if si+1 < len(steps) else len(ins)
        st = ins[a:b]
        print(f"step {si}: {(st[-1]['e']-st[0]['s'])/1e3:.1f} us, {len(st)} kernels")
    # use the last full step
    a = steps[-2]; b = steps[-1]
    st = ins[a:b]
    agg = collections.OrderedDict()
    prev = prod = None
    for x in st:
        nm = name(x['key'])
        d = agg.setdefault(nm, collections.defaultdict(list))
        d['count'].append(1)
        d['span'].append((x['e'] - x['s']) / 1e3)             # first CTA start to last CTA end
        d['work'].append((x['e'] - x['wmin']) / 1e3 if x['wmin'] else float('nan'))  # first wait release to end
        d['ctas'].append(x['n'])
        d['launch_spread'].append((x['s_last'] - x['s']) / 1e3)
        d['end_spread'].append((x['e'] - x['emin']) / 1e3)
        if prev is not None:
            d['start_after_prev_start'].append((x['s'] - prev['s']) / 1e3)
            d['dep'].append((x['wmin'] - prev['e']) / 1e3 if x['wmin'] else float('nan'))  # prev last end -> first release
            d['end_after_prev_end'].append((x['e'] - prev['e']) / 1e3)
        if prod is not None:
            d['pre'].append((prod['e'] - x['s']) / 1e3)
            d['early'].append(int(np.searchsorted(x['t0s'], prod['e'])))
            d['p_rel'].append((x['wmin'] - prod['e']) / 1e3 if x['wmin'] else float('nan'))
        prev = x
        if x['key'][0] != 15:
            prod = x
    print(f"{'kernel':38s} {'n':>3s} {'ctas':>5s} {'span':>6s} {'rel->end':>8s} {'dep':>6s} {'e-e':>6s} {'lspread':>7s} {'espread':>7s} {'pre':>6s} {'early':>5s} {'p-rel':>6s}")
    for nm, d in agg.items():
        m = lambda k: float(np.nanmedian(d[k])) if d[k] else float('nan')
        n = len(d['count'])
        print(f"{nm:38s} {n:3d} {m('ctas'):5.0f} {m('span'):6.2f} {m('work'):8.2f} {m('dep'):6.2f} {m('end_after_prev_end'):6.2f} {m('launch_spread'):7.2f} {m('end_spread'):7.2f} {m('pre'):6.2f} {m('early'):5.0f} {m('p_rel'):6.2f}")
    print(f"step (last full) {(st[-1]['e']-st[0]['s'])/1e3:.1f} us")
for p in sys.argv[1:]:
    summarize(p)
