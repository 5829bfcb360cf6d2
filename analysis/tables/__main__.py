"""``python -m analysis.tables TOPIC SWEEP_DIR...``: one topic's tables for any sweep.

    layers      µs per call each layer of torch.compile adds over eager (+experiment=targets)
    host_model  latency ~ max(device µs, host units x G): prediction and crossover host speed
    startup     the first call (cold, warm, artifacts), regional compilation, guards
    models      real models: speedup, compile s, graph breaks, memory, pass rate
    training    speedup per pass, memory, dynamic shapes
    suite       the model suite: per kind, mode and model; the HUD's figures beside
    predict     what a sweep on one GPU predicts for another (--to CEILINGS [--measured SWEEP])

The rest of ``SWEEP_DIR...`` and any option go to the topic (``layers --source S``)."""

from __future__ import annotations

import sys

from analysis.tables import host_model, layers, models, predict, startup, suite, training

TOPICS = {
    "layers": layers.main,
    "host_model": host_model.main,
    "startup": startup.main,
    "models": models.main,
    "training": training.main,
    "suite": suite.main,
    "predict": predict.main,
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in TOPICS:
        print(__doc__, file=sys.stderr)
        return 2
    rc = TOPICS[argv[0]](argv[1:])
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    from analysis.cli import run  # deferred: a command's end, not the module's

    run(main)
