"""Why a model's host_us can read above its own latency: host time of the same calls, timed
three ways, on one GPU (CUDA only).

    python benchmarks/host_block_probe.py [--models resnet18,gpt2,gpt2_decode] [--out DIR]

For each model, eager and compiled (default):
- ``latency``: CUDA events around chunks of 10 back-to-back calls (the study's per-call latency);
- ``loop_host``: the host clock around k calls inside that same steady loop, no sync between,
  while the queue is not full (host time of warm calls, with the GPU busy as in any loop);
- ``sleep_host[n]``: the study's host block: n calls behind a GPU sleep, after a synchronise,
  per-call host times split into the block's first call and the rest.
Then the launch queue's depth: how many tiny kernels the host can queue behind a long sleep
before a launch blocks.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

import torch

from study.measure import host_cost, host_gauge


def models(names):
    import torchvision
    import transformers as t

    out = {}
    for name in names:
        if name == "resnet18":
            m = torchvision.models.resnet18(weights=None)
            x = torch.randn(32, 3, 224, 224)
            out[name] = (m, (x,), {})
        elif name.startswith("gpt2"):
            cfg = t.GPT2Config(n_embd=768, n_head=12, n_layer=2, vocab_size=1024, use_cache=False)
            m = t.GPT2Model(cfg)
            b, s = (1, 64) if name == "gpt2_decode" else (8, 512)
            ids = torch.randint(0, 256, (b, s))
            out[name] = (m, (), {"input_ids": ids})
        elif name == "bert":
            cfg = t.BertConfig(num_hidden_layers=2, vocab_size=1024)
            m = t.BertModel(cfg)
            ids = torch.randint(0, 256, (8, 512))
            out[name] = (m, (), {"input_ids": ids, "attention_mask": torch.ones_like(ids)})
    return out


def ev_latency(fn, chunks=8, k=10):
    res = []
    for _ in range(chunks):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(k):
            fn()
        e.record()
        e.synchronize()
        res.append(s.elapsed_time(e) * 1e3 / k)
    return statistics.median(res)


def loop_host(fn, k=4, rounds=8):
    """Host µs per call over k calls in a steady loop (a few calls ahead first), no sync."""
    res = []
    for _ in range(rounds):
        for _ in range(2):
            fn()
        t = time.perf_counter_ns()
        for _ in range(k):
            fn()
        res.append((time.perf_counter_ns() - t) / 1e3 / k)
        torch.cuda.synchronize()
    return statistics.median(res)


def sleep_host(fn, n, cyc, blocks=10, lead=0):
    first, rest, cov = [], [], []
    for _ in range(blocks):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(max(5.0, n * 6.0) * cyc))
        ev = torch.cuda.Event()
        ev.record()
        for _ in range(lead):
            fn()
        marks = [time.perf_counter_ns()]
        for _ in range(n):
            fn()
            marks.append(time.perf_counter_ns())
        cov.append(not ev.query())
        d = [(b - a) / 1e3 for a, b in zip(marks, marks[1:], strict=False)]
        first.append(d[0])
        rest.extend(d[1:])
    torch.cuda.synchronize()
    return {
        "first": statistics.median(first),
        "rest": statistics.median(rest) if rest else None,
        "covered": sum(cov),
    }


def queue_depth(cyc):
    x = torch.zeros(16, device="cuda")
    out = {}
    for what, launch in (("sleep0", lambda: torch.cuda._sleep(1)), ("add", lambda: x.add_(1))):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(400 * cyc))
        ts = []
        i = 0
        for i in range(20000):  # noqa: B007 - the count where a launch waited
            t = time.perf_counter_ns()
            launch()
            d = (time.perf_counter_ns() - t) / 1e3
            ts.append(d)
            if d > 1000:
                break
        torch.cuda.synchronize()
        out[what] = {"blocked_at": i if ts[-1] > 1000 else None, "median_us": statistics.median(ts)}
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", default="resnet18,gpt2,gpt2_decode,bert")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    torch.backends.cudnn.benchmark = False
    cyc = host_cost.cycles_per_ms()
    res = {"gpu": torch.cuda.get_device_name(), "queue": queue_depth(cyc)}
    print(json.dumps(res["queue"]))
    gauge = host_gauge.gauge_us
    for name, (m, args, kw) in models(a.models.split(",")).items():
        m = m.to("cuda", torch.bfloat16).eval()
        args = tuple(
            x.to("cuda", torch.bfloat16 if x.is_floating_point() else x.dtype) for x in args
        )
        kw = {k: v.to("cuda") for k, v in kw.items()}
        for mode in ("off", "default"):
            f = m if mode == "off" else torch.compile(m)

            def fn(f=f, args=args, kw=kw):
                with torch.no_grad():
                    return f(*args, **kw)

            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            gc.collect()
            gc.disable()
            row = {
                "model": name,
                "mode": mode,
                "latency": ev_latency(fn),
                "loop_host": loop_host(fn),
            }
            for n in (1, 2, 4, 8):
                row[f"sleep{n}"] = sleep_host(fn, n, cyc)
            row["sleep1_lead1"] = sleep_host(fn, 1, cyc, lead=1)
            row["sleep4_lead2"] = sleep_host(fn, 4, cyc, lead=2)  # loop_host's calls, slept
            gc.enable()
            row["latency_again"] = ev_latency(fn)
            if gauge:
                row["gauge"] = gauge()
            print(json.dumps(row))
            res.setdefault("rows", []).append(row)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
