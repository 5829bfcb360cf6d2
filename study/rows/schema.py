"""Every column of every CSV the study writes: name, unit, meaning. The one place.

``python -m study.rows.schema`` prints SCHEMA.md (a test keeps the two in sync). Writers refuse
columns that are not declared here, and ``analysis/`` reads these same names. No torch.
"""

# Long: every column of every CSV, with its unit and meaning, in one table: the one place columns
# are defined.

from __future__ import annotations

from typing import NamedTuple

# The shape parameters a workload can have (config keys shape.*, and CSV columns).
SHAPE_KEYS = (
    "n",
    "batch",
    "in_features",
    "out_features",
    "seq_len",
    "dim",
    "hidden",
    "heads",
    "head_dim",
)


class Col(NamedTuple):
    name: str
    unit: str
    meaning: str


KEYS = [
    Col("run_id", "", "the job dir name, e.g. compile=default,variant=flash"),
    Col(
        "variant",
        "",
        "workload variant (conf/variant): matmul_add, linear, mlp, naive, naive_inplace, math, efficient, flash, cudnn, sdpa, block; or a custom variant's name (variant.target)",
    ),
    Col("family", "", "workload family: matmul, linear, mlp, attention, block, custom"),
    Col(
        "compile",
        "",
        "compile target (study/config/compile_targets.py): off (eager); Inductor's modes default, "
        "reduce-overhead, max-autotune, max-autotune-no-cudagraphs; torch.compile taken apart: "
        "dynamo_eager, aot_eager, cudagraphs; deployment paths: cpp_wrapper, aot_inductor",
    ),
    Col("device", "", "cuda or cpu (device=auto resolved)"),
    Col("dtype", "", "bf16, fp16 or fp32"),
]

SHAPE = [
    Col("n", "", "matmul_add: square size N"),
    Col("batch", "", "batch size"),
    Col("in_features", "", "linear: input features"),
    Col("out_features", "", "linear: output features"),
    Col("seq_len", "", "sequence length (mlp and block: tokens per batch row; attention: S)"),
    Col("dim", "", "mlp, block: model dim"),
    Col("hidden", "", "mlp, block: hidden dim of the MLP"),
    Col("heads", "", "attention, block: heads H"),
    Col("head_dim", "", "attention: head dim D"),
    Col("causal", "bool", "attention: causal mask"),
    Col(
        "mask",
        "",
        "attention: the mask (family.mask): causal, sliding_window, document, prefix_lm, none; "
        "its parameters are in notes",
    ),
    Col("score_mod", "", "attention: score modification (family.score_mod): none, alibi, softcap"),
    Col(
        "layers",
        "",
        "depth the config asked for: block's shape.layers (blocks stacked in an nn.ModuleList), "
        "a model's variant.kwargs.layers; empty: one block, or the model's own default depth "
        "(as every row before depths)",
    ),
]

RUN = (
    KEYS
    + SHAPE
    + [
        Col("fullgraph", "bool", "torch.compile fullgraph"),
        Col("dynamic", "bool", "torch.compile dynamic (empty = automatic)"),
        Col(
            "inductor_patches", "", "Inductor config patches given by compile.inductor, as k=v;..."
        ),
        Col(
            "timing_overrides",
            "",
            "the timing.* settings that differ from their defaults, as k=v;... (empty: the "
            "defaults): what tells apart cells of a sweep over a timing setting "
            "(timing.host_sleep_ms=5,40), whose other columns match",
        ),
        Col(
            "cache",
            "",
            "compile cache policy: cold (private per cell) or warm (shared, keyed by cell)",
        ),
        Col(
            "start",
            "",
            "what ran before the cell's process (start=, study.cell.start): cold, nothing; warm, "
            "a primer process compiled the cell into its cache dirs (a restart on the same "
            "machine); artifacts, a primer saved torch.compiler.save_cache_artifacts() and the "
            "cell, with empty caches, loaded them before its first call (a service's cold "
            "start on a new machine). cache says where the caches live (private or shared), "
            "start what ran before the first call. Blank on eager",
        ),
        Col("seed", "", "seed of the inputs and parameters"),
        Col(
            "config_hash",
            "",
            "hash of the cell's resolved config, without where/how it ran (resume, cores, "
            "repeat, ...): repeats of one cell share it; resume skips a cell only when it matches",
        ),
        Col("repeat", "", "which repetition of the cell this row is (repeats=N: 0..N-1)"),
        Col(
            "eager_hash",
            "",
            "the config_hash of this cell's eager twin (compile=off): what speedup divides by",
        ),
        Col(
            "pass",
            "",
            "what one call is (pass=): fwd, fwd_bwd (forward, (out*g).sum(), backward) or "
            "train_step (fwd_bwd + AdamW.step); study/cell/passes.py",
        ),
        Col(
            "regime",
            "",
            "the suite's size regime (regime=, conf/regime/): throughput (a model's batch "
            "sizes: 32 images, 8 x 512 tokens on CUDA), latency (a decode-sized call: batch 1, "
            "a short sequence; a decoder LM's one decode step against a static KV cache); "
            "empty: no regime (the variant's own sizes)",
        ),
        Col(
            "model_kind",
            "",
            "a suite model's kind (variant.kind): decoder, encoder, encoder-decoder, cnn, "
            "vision-transformer; empty for the ladder and your own workloads",
        ),
        Col(
            "model_library",
            "",
            "the library a suite model comes from (variant.library): transformers, timm, "
            "torchvision",
        ),
        Col(
            "compiled_autograd",
            "bool",
            "compile.compiled_autograd: the backward captured by compiled autograd",
        ),
        Col(
            "freezing",
            "bool",
            "compile.freezing: parameters frozen into constants (Inductor targets, pass=fwd, "
            "under torch.no_grad)",
        ),
        Col(
            "compile_stance",
            "",
            "compile.stance: torch.compiler.set_stance while timed and profiled; default, or "
            "skip_guard_eval_unsafe: Dynamo evaluates only the guards that tell its compiled "
            "graphs apart, so host_us against the same cell under default is what its guards "
            "cost a call. UNSAFE outside a measurement: a call whose inputs the skipped guards "
            "would have caught runs a graph compiled for other inputs, without an error. "
            "Empty for eager",
        ),
        Col(
            "regional",
            "bool",
            "compile.regional=true: the repeated block compiled by region (regional_method), "
            "not the whole model; empty: the whole model, and for eager",
        ),
        Col(
            "regional_method",
            "",
            "how the regions were compiled (compile.regional_how; auto resolved on this torch): "
            "nested_compile_region (the whole model compiled, the block a region traced once "
            "and reused) or per-block torch.compile (each block compiled on its own, the rest "
            "eager). Empty without compile.regional",
        ),
        Col(
            "regional_blocks",
            "",
            "compile.regional: how many blocks were compiled as regions (the repeated nn.ModuleList "
            "or nn.Sequential's children)",
        ),
        Col(
            "regional_block",
            "",
            "compile.regional: the block's class and where it sits ('GPT2Block in inner.h')",
        ),
        Col(
            "compile_threads",
            "",
            "Inductor compile_threads (compile.threads; 1 = no async-compile process pool)",
        ),
        Col("status", "", "ok, mismatch, invalid, unsupported, oom, error, timeout, crash"),
        Col("reason", "", "why the status is not ok (library message, kernels seen, ...)"),
        Col("notes", "", "facts a reader should know that do not change the status"),
        Col(
            "expect",
            "",
            "the cell's predictions (the expect block of its variant and the command line), "
            "as JSON: a column and a value (=, <, <=, >, >=, a..b, ~regex), or a scope (eager, "
            "compiled, a mode, a pass) holding such pairs (study.rows.expect)",
        ),
        Col(
            "expectations",
            "",
            "predictions checked against this row (a blank value is not checked, never broken)",
        ),
        Col("surprises", "", "predictions this row broke: the insight, read these first"),
        Col(
            "surprise_detail",
            "",
            "each broken prediction: expected, measured, and for kernel counts the classes "
            "behind the count ('kernels_per_step: expected 6, measured 7 (gemm 2, memset 1, ...)')",
        ),
        Col("backend_expected", "", "SDPA backend the variant pins (empty for non-SDPA and sdpa)"),
        Col("backend_seen", "", "SDPA backend(s) the trace or compiled graph proves ran"),
        Col("backend_proof", "", "the kernel, aten op or compiled-graph origin that proves it"),
        Col(
            "target_proof",
            "",
            "what proves the compile target ran as it claims (study.observe.proof.prove_target): "
            "a captured graph and no generated kernel (dynamo_eager, aot_eager, cudagraphs), a "
            "C++ wrapper (cpp_wrapper), every generated kernel in the package (aot_inductor), "
            "frozen parameters (compile.freezing); empty for eager and plain Inductor modes",
        ),
        Col("max_abs_err", "", "max |out - ref| against a float64 reference"),
        Col("max_rel_err", "", "max_abs_err / max |ref|; compared with tolerance"),
        Col("norm_rel_err", "", "||out - ref||_2 / ||ref||_2"),
        Col(
            "tolerance",
            "",
            "max_rel_err allowed: the dtype's, or with tolerance_rule=eager 3x eager_max_rel_err "
            "where that is larger",
        ),
        Col(
            "eager_max_rel_err",
            "",
            "tolerance_rule=eager: eager's own max_rel_err (output and gradients) against the "
            "same float64 reference, in the same process, from the same first-call state",
        ),
        Col(
            "grad_max_rel_err",
            "",
            "training passes: the largest max_rel_err over every input's and parameter's "
            "gradient against float64 (same tolerance as the output), each scaled by at least "
            "its parameter group's largest value (docs/method.md)",
        ),
        Col("grad_worst", "", "the gradient with that error (param:<name> or input:<i>)"),
        Col("first_call_s", "s", "wall time of the first call, compile included"),
        Col(
            "cold_first_call_s",
            "s",
            "start=warm|artifacts: the primer process's first call, a cold start of the same "
            "cell (compile included) in a fresh interpreter, without the warm parent's "
            "prewarmed imports (a start=cold row of the same sweep has them); blank when the "
            "primer hit a cache",
        ),
        Col("cold_compile_s", "s", "start=warm|artifacts: the primer's compile_s (cold)"),
        Col("prime_s", "s", "start=warm|artifacts: the primer process, start to end"),
        Col(
            "artifacts_load_s",
            "s",
            "start=artifacts: torch.compiler.load_cache_artifacts, before the first call (not "
            "in first_call_s)",
        ),
        Col("artifacts_bytes", "B", "start=artifacts: the size of cache_artifacts.bin"),
        Col(
            "artifacts_loaded",
            "",
            "start=artifacts: what the artifacts held, by kind ('aot_autograd 1, inductor 1')",
        ),
        Col(
            "first_call_dynamo_share",
            "",
            "dynamo_s / first_call_s: how much of the first call was still Dynamo tracing",
        ),
        Col(
            "latency_median_us",
            "us",
            "per-call latency timed apart (not in the paired blocks: beside speedup_paired read "
            "eager_latency_paired_us and compiled_latency_paired_us), median, calls back to "
            "back, timed in the host's fast phase "
            "(timing_phase; study.measure.host_gauge). CUDA: events around chunks of timing.calls/10 calls, "
            "one sample per chunk (events around each call add host time of their own: "
            "compiled cuDNN read 80 us against 60 back to back on the H200 host); CPU: a "
            "monotonic clock around each call",
        ),
        Col("latency_p10_us", "us", "per-call latency, 10th percentile"),
        Col("latency_p90_us", "us", "per-call latency, 90th percentile"),
        Col(
            "latency_samples",
            "",
            "samples behind the latency columns: calls (CPU) or chunks of calls (CUDA)",
        ),
        Col("latency_method", "", "cuda_events_per_<N>_calls or perf_counter_per_call"),
        Col("device_time_us", "us", "device time per call, median (CUDA graph replay or do_bench)"),
        Col("device_time_p10_us", "us", "device time per call, 10th percentile"),
        Col("device_time_p90_us", "us", "device time per call, 90th percentile"),
        Col("device_time_method", "", "cuda_graph_replay_xN, do_bench_l2_flush, or none"),
        Col(
            "device_time_l2",
            "",
            "whether L2 was flushed between the calls behind device_time_us: 'not flushed' "
            "(graph replay) or 'flushed' (do_bench); compare device times only within one",
        ),
        Col(
            "eager_latency_paired_us",
            "us",
            "compiled cells: eager per-call latency, median over the eager blocks timed in "
            "alternation with compiled ones, in this cell's process, in the same host phase as "
            "latency_median_us and speedup_paired",
        ),
        Col(
            "compiled_latency_paired_us",
            "us",
            "compiled cells: compiled per-call latency, median over the compiled blocks timed in "
            "alternation with eager_latency_paired_us's eager ones: the two µs the speedup "
            "comes from (eager_latency_paired_us / this is about speedup_paired). "
            "latency_median_us is the same cell's calls timed apart, in their own chunks",
        ),
        Col(
            "speedup_paired",
            "x",
            "THE speedup (compiled cells): median(eager blocks) / median(compiled blocks), "
            "timed in alternation in one process (same host, clocks, load), with its 95% "
            "interval in speedup_ci_low/high",
        ),
        Col(
            "speedup_ci_low",
            "x",
            "95% interval of speedup_paired, low end (percentile bootstrap over pairs, "
            "2000 resamples, seeded; study.observe.stats). An interval holding 1.0: no measurable difference",
        ),
        Col("speedup_ci_high", "x", "95% interval of speedup_paired, high end"),
        Col(
            "pairs",
            "",
            "eager/compiled block pairs behind speedup_paired: the fast-phase pairs "
            "(timing.pairs of them, unless timing.max_s ran out), or every pair when fewer "
            "than 10 ran fast (timing_phase mixed or slow)",
        ),
        Col(
            "pair_calls",
            "",
            "back-to-back calls per block: about timing.block_ms per block, and at least 3 "
            "(CUDA: at least a per-call chunk, timing.calls / 10), so a training block "
            "(fwd_bwd, train_step) times a steady state of consecutive steps (forward, "
            "backward and for train_step the optimizer) queued behind each other, not one step "
            "from an idle device",
        ),
        Col(
            "pairs_fast",
            "",
            "paired blocks whose gauges on both sides said fast (study.measure.host_gauge)",
        ),
        Col(
            "pairs_slow",
            "",
            "paired blocks timed in the host's slow phase (left out of a fast row's figures; "
            "counted in a mixed or slow one's)",
        ),
        Col(
            "speedup_paired_slow",
            "x",
            "the same ratio over the slow-phase pairs alone (at least 5 of them): how much the "
            "host's slow phase moves this cell's speedup. Data, never THE speedup",
        ),
        Col(
            "timing_phase",
            "",
            "which host phase the latency and paired figures come from: fast (blocks whose "
            "gauges on both sides were within timing.fast_ratio of the fast level), mixed "
            "(fewer than 10 fast pairs before timing.max_s: every block), slow (no fast block "
            "at all: every block), or contended (host_loaded: others ran on the cell's cores). "
            "Only fast rows are fast-phase figures; the analysis never mixes the others in",
        ),
        Col(
            "phase_fast_share",
            "",
            "share of the timed blocks (per-call chunks and pairs) that ran in the fast phase",
        ),
        Col(
            "gauge_fast_us",
            "us",
            "the host gauge's fast level the rounds were judged by: the lowest level 5 "
            "consecutive gauge readings held (study.measure.host_gauge), this cell's own or the lowest this "
            "boot of this host recorded (host_gauge.txt), whichever is lower; the dip instead "
            "when the host never held its fast phase (gauge_held). The gauge: best of 3 runs of "
            "a 300-iteration Python loop plus one CPU tensor add, before and after every round",
        ),
        Col(
            "gauge_own_us",
            "us",
            "this cell's own held level (the lowest level 5 consecutive readings of its gauge "
            "held), whatever gauge_fast_us took: how fast this host ran while this cell was timed",
        ),
        Col("gauge_slow_us", "us", "median gauge reading of the blocks that were not fast"),
        Col(
            "gpu_power_w",
            "W",
            "CUDA: the GPU's mean power over the timed rounds (NVML's energy counter, read "
            "before and after; a compiled cell's rounds hold eager's paired blocks too); rounds "
            "under 1 s (the counter advances every 100 ms) are followed, inside the window, by "
            "the cell's step back to back until it holds 1 s (the notes say how many steps)",
        ),
        Col(
            "gpu_power_capped_share",
            "",
            "CUDA: the share of the timed rounds' time the GPU's clocks were held down by its "
            "power cap (NVML's power-policy violation time): back-to-back GEMMs on the H200 "
            "run capped within a second (benchmarks/clock_probe.py)",
        ),
        Col(
            "gauge_level_source",
            "",
            "cell, host or dip: where gauge_fast_us came from (dip: the host never held its "
            "fast phase, gauge_held false)",
        ),
        Col(
            "gauge_held",
            "bool",
            "the fast level was one the gauge held for 5 readings in a row (study.measure.host_gauge). False: "
            "the gauge dipped more than timing.fast_ratio below the best level it held, so the "
            "host has a faster phase it did not hold; the rounds are judged against the dip, "
            "and the row says the host never held its fast phase",
        ),
        Col(
            "host_us",
            "us",
            "CUDA: host time per call at the timed calls' host speed: host_units x "
            "timing_gauge_us, so that it compares with the row's latency and device time "
            "(host_block_us: the blocks' own us). Measured directly (study.measure.host_cost): "
            "blocks of back-to-back calls issued while a GPU sleep queued ahead keeps the host "
            "from ever waiting for the GPU (a block the sleep did not cover is left out); the "
            "median over the fast-phase blocks (every covered block when fewer than 5 ran "
            "fast). Rows before host_block_us: the blocks' own us. Each block "
            "makes one untimed call behind the sleep first (no timed call is a cold one) and "
            "holds at most half the GPU's launch queue (host_queue_slots, host_queue_depth). "
            "Blank where host_status is not measured, and on the CPU, where host and device "
            "are one",
        ),
        Col(
            "host_block_us",
            "us",
            "CUDA: host_us as its blocks timed it, at their own host speed (host_gauge_us)",
        ),
        Col(
            "timing_gauge_us",
            "us",
            "the host's speed while the row's latency and paired figures were timed: the "
            "median gauge reading over the rounds they use (host_us is taken at it)",
        ),
        Col(
            "host_status",
            "",
            "CUDA: what became of host_us: measured; above_latency (at the timed calls' host "
            "speed, host_units x their gauge, it read above the call's latency p90, which a "
            "steady loop cannot: a broken figure, blanked, no host verdict); serial (a call "
            "waits for the GPU inside, found by torch's sync debug mode: host and device run in "
            "series, latency is their sum, no block can time the host alone); not_covered (no "
            "block finished before the GPU's sleep); queue_full (one call queues more launches "
            "than half the GPU's launch queue)",
        ),
        Col(
            "host_queue_slots",
            "",
            "CUDA: launch-queue entries one call takes (queued behind a sleep; study.measure."
            "host_cost.queue_slots): a host_us block holds at most half host_queue_depth",
        ),
        Col(
            "host_queue_depth",
            "",
            "CUDA: launches the GPU's queue holds before a launch waits, measured once per "
            "cell process (1,021 on an H100)",
        ),
        Col(
            "host_units",
            "",
            "host_us in units of this host's speed: the median over the same blocks of a "
            "block's host us per call over the gauge's us around it. Carries from one host to "
            "another better than us: predicted latency at host speed G is about "
            "max(device_time_us, host_units x G)",
        ),
        Col(
            "host_gauge_us",
            "us",
            "the host's speed while host_us was timed: the median gauge reading around its blocks",
        ),
        Col("host_blocks", "", "blocks timed for host_us (timing.host_blocks)"),
        Col("host_blocks_fast", "", "of those, blocks covered by the sleep in the fast phase"),
        Col("host_calls", "", "calls per host_us block (at most timing.host_calls)"),
        Col(
            "eager_host_us",
            "us",
            "compiled CUDA cells: the eager twin's host_us, in the same rounds (ABBA) and phases",
        ),
        Col("eager_host_units", "", "compiled CUDA cells: the eager twin's host_units"),
        Col("eager_host_status", "", "compiled CUDA cells: the eager twin's host_status"),
        Col(
            "pair_lead_in",
            "",
            "untimed calls before each paired block (timing.lead_in; 0: each block timed from an "
            "idle device, which reads GPU-bound speedups low)",
        ),
        Col("profiled_steps", "", "profiler steps analysed (schedule active)"),
        Col(
            "kernels_per_step",
            "",
            "device kernels + memcpy + memset per step (CPU: kernel ops per step), median over steps",
        ),
        Col("steps_consistent", "bool", "every profiled step ran the same number of kernels"),
        Col("kernels_by_class", "", "kernels per step by kernel_class, class:count;..."),
        Col(
            "kernels_by_phase",
            "",
            "kernels per step by phase of the pass, fwd:n;bwd:n;optim:n (kernels.csv phase)",
        ),
        Col(
            "copies_per_step",
            "",
            "copy kernels per step (Memcpy and copy kernels: the hidden copy)",
        ),
        Col("memsets_per_step", "", "memset kernels per step"),
        Col("generated_per_step", "", "Inductor-generated kernels per step"),
        Col(
            "launches_per_step",
            "",
            "CPU-side launch calls per step (cudaLaunchKernel, cuLaunchKernel*, cudaGraphLaunch, memcpy/memset)",
        ),
        Col("cpu_us_per_step", "us", "CPU time of a profiled step (dispatch + launch), median"),
        Col(
            "gpu_us_per_step",
            "us",
            "device busy time per step (union of kernel intervals); CPU: kernel self time",
        ),
        Col(
            "kernel_us_per_step",
            "us",
            "sum of kernel durations per step (timing mode 3: kernel time)",
        ),
        Col(
            "idle_us_per_step",
            "us",
            "device idle inside a step: first-to-last kernel span minus busy (CPU: step time minus kernel time)",
        ),
        Col(
            "profiled_step_us", "us", "wall time of a profiled step, to the end of its last kernel"
        ),
        Col("profiler_overhead", "x", "profiled_step_us / latency_median_us"),
        Col("cpu_bound", "bool", "cpu_us_per_step > gpu_us_per_step (GPU only)"),
        Col(
            "host_bound",
            "bool",
            "GPU only: host_us > the device time per call free of host time (device_time_us "
            "where CUDA graph replay timed it, else the profiler's gpu_us_per_step: do_bench "
            "times a call as issued, host included): the host's work per call outlasts the "
            "GPU's, so the GPU waits and "
            "the latency moves with the host's speed. The one definition "
            "(study.rows.metrics.host_bound); rows measured before host_us existed fall back "
            "to an inference from latency (latency_median_us > 1.1 x gpu_us_per_step), which "
            "belongs to the host they ran on",
        ),
        Col("dominant_kernel", "", "full name of the kernel with the most device time"),
        Col("dominant_share", "", "its share of the step's kernel time (0-1)"),
        Col(
            "dominant_occupancy_pct",
            "%",
            "the dominant kernel's estimated achieved occupancy from the trace (kernels.csv "
            "occupancy_pct; a static estimate, blank where kineto reports none)",
        ),
        Col(
            "fp32_gemms_per_step",
            "",
            "GEMM kernels per step whose name says FP32 (sgemm, f32f32, tf32, ...): in a bf16 "
            "or fp16 run, a matmul that left the low-precision path",
        ),
        Col("graph_launched", "bool", "kernels were replayed from a CUDA graph"),
        Col(
            "cudagraph_kernel_share",
            "fraction",
            "the share of the profiled steps' device time (kernel_us_per_step: kernels, memcpy "
            "and memset, so the input copies into a graph's static buffers count as outside "
            "it) launched by a CUDA graph's replay (one cudaGraphLaunch), summed over the "
            "steps; blank on eager, on targets without CUDA graphs, on the CPU (no device "
            "trace) and where the steps show no device time",
        ),
        Col(
            "unattributed_events", "", "device events whose launch fell outside every profiled step"
        ),
        Col(
            "peak_mem_alloc_bytes",
            "B",
            "peak memory of the step in steady state (after warm-up): CUDA, "
            "max_memory_allocated; CPU, peak resident growth over the calls (mem_source)",
        ),
        Col(
            "peak_mem_step_bytes",
            "B",
            "the step's own peak: peak_mem_alloc_bytes less what was allocated when the calls "
            "began (inputs, parameters, and what earlier calls left allocated, such as a 32 MiB "
            "cuBLAS workspace of eager's in a compiled cell's process); the CPU's is its growth",
        ),
        Col("peak_mem_reserved_bytes", "B", "CUDA: max_memory_reserved over the same calls"),
        Col(
            "compile_peak_mem_bytes",
            "B",
            "peak memory of the first call (compile, autotuning, CUDA-graph recording included)",
        ),
        Col(
            "eager_peak_mem_alloc_bytes",
            "B",
            "compiled cells: the eager step's steady-state peak, measured in the same process",
        ),
        Col(
            "eager_peak_mem_step_bytes",
            "B",
            "compiled cells: the eager step's own peak (as peak_mem_step_bytes), same process",
        ),
        Col(
            "compression_ratio",
            "x",
            "compiled cells: eager_peak_mem_alloc_bytes / peak_mem_alloc_bytes (above 1: "
            "compiled needs less memory), as PyTorch's dynamo benchmark harness reports it",
        ),
        Col(
            "mem_source",
            "",
            "cuda_caching_allocator, or cpu_rss_peak_delta (VmHWM reset by clear_refs, minus the "
            "resident memory before the calls: includes the allocator's slack)",
        ),
        Col(
            "saved_tensors",
            "",
            "training passes: tensors saved for backward in one forward (autograd's pack hook, "
            "once per tensor; AOTAutograd's partitioner decides them for compiled cells)",
        ),
        Col(
            "saved_bytes",
            "B",
            "bytes of the saved tensors that are activations (inputs and parameters are saved "
            "by reference), once per storage",
        ),
        Col("eager_saved_tensors", "", "compiled cells: saved_tensors of the eager step"),
        Col("eager_saved_bytes", "B", "compiled cells: saved_bytes of the eager step"),
        Col(
            "autograd_captures",
            "",
            "compiled autograd: backward graphs captured (torch._dynamo counters)",
        ),
        Col("autograd_compiles", "", "compiled autograd: backward graphs compiled"),
        Col("compile_s", "s", "Dynamo frame compile time, all frames (empty for eager)"),
        Col("dynamo_s", "s", "compile_s minus backend time: Dynamo tracing and guards"),
        Col("aot_s", "s", "backend time minus Inductor time: AOTAutograd"),
        Col("inductor_s", "s", "Inductor compile time"),
        Col(
            "codegen_s",
            "s",
            "Inductor code generation (includes C++/Triton compile on a cold cache)",
        ),
        Col("triton_compile_s", "s", "Triton kernel compile time"),
        Col("autotune_s", "s", "compile-time autotuning"),
        Col("cache_hits", "", "FX graph + AOTAutograd cache hits"),
        Col("cache_misses", "", "FX graph + AOTAutograd cache misses"),
        Col("fxgraph_cache_hits", "", "Inductor FX graph cache hits"),
        Col("fxgraph_cache_misses", "", "Inductor FX graph cache misses"),
        Col("aot_cache_hits", "", "AOTAutograd cache hits (a hit skips Inductor altogether)"),
        Col("aot_cache_misses", "", "AOTAutograd cache misses"),
        Col(
            "autotune_cache_hits",
            "",
            "max-autotune's local autotune cache hits (Inductor's counter); blank when none",
        ),
        Col("graphs", "", "graphs Dynamo captured"),
        Col(
            "graph_ops",
            "",
            "FX nodes in the graphs Dynamo captured, summed over its compiles (graph_op_count): "
            "what was traced. A reused region counts once (regional: one block's graph reused "
            "by every block, or one call node per block under nested_compile_region)",
        ),
        Col("graph_breaks", "", "graph breaks"),
        Col(
            "graph_break_reasons",
            "",
            "graph break reasons with counts, each with its "
            "registry code in front where this torch has the registry (GB0059: Failed to trace "
            "builtin operator …)",
        ),
        Col(
            "graph_break_codes",
            "",
            "graph breaks counted by registry code ('GB0059 (x2)', one per code, joined as "
            "the reasons are): the report sums them over a sweep; blank without breaks or on a "
            "torch without Dynamo's graph-break registry (before 2.8)",
        ),
        Col(
            "compile_log",
            "",
            "the cell's structured compile log (TORCH_TRACE; compile.trace_log=true), relative "
            "to its run dir: what tlparse reads",
        ),
        Col(
            "tlparse_index",
            "",
            "tlparse's rendering of compile_log (generated/tlparse/index.html), where tlparse "
            "is installed (pip install tlparse); blank without it, and a note says how",
        ),
        Col("recompiles", "", "recompilations"),
        Col("recompile_reasons", "", "why Dynamo recompiled"),
        Col(
            "cudagraph_skips",
            "",
            "CUDA-graph skips torch counted (counters['inductor']['cudagraph_skips']): a graph "
            "Inductor or the cudagraphs backend left out, or a function past its re-record "
            "limit; for CUDA-graph targets read after the profiled steady state, else after "
            "the first call",
        ),
        Col(
            "cudagraph_skip_reasons",
            "",
            "why CUDA graphs were skipped, each reason with its count ('skipping cudagraphs "
            "due to mutated inputs (1 instances) (x2)', most first, joined by ' | '): every "
            "message torch logged as it skipped, at compile and at run time; a graph whose "
            "CUDA graphs Inductor's graph partition turned off without a message gives the "
            "graph's own reason; a skip torch counted without a message is 'no CUDA device in "
            "the graph ...' (the CPU). Rows written before the counts give each reason once, "
            "without one",
        ),
        Col(
            "cudagraph_graphs",
            "",
            "CUDA graphs cudagraph trees recorded in this cell (a re-recording is one more), "
            "after the profiled steady state (graph trees record at a function's 2nd call; "
            "after the first call where the cell stopped before). Blank on eager and targets "
            "without CUDA graphs; 0 on the CPU, where CUDA graphs never apply",
        ),
        Col(
            "cudagraph_partitions",
            "",
            "partitions captured: functions handed to cudagraph trees (each partition Inductor "
            "split out for CUDA graphs, or a whole graph; the cudagraphs backend's forward "
            "and backward) that recorded a CUDA graph; read as cudagraph_graphs; 0 on the CPU",
        ),
        Col(
            "cudagraph_partitions_skipped",
            "",
            "partitions not captured: the pieces of Inductor's graphs compiled to run outside "
            "CUDA graphs (every partition of a graph whose CUDA graphs were turned off; else "
            "those its graph partition left out: CPU or cudagraph-unsafe ops), plus functions "
            "handed to cudagraph trees that never recorded; for the cudagraphs backend (no "
            "Inductor graph) the skips counted by the end of the first call (a backward after a "
            "skipped forward is not counted). Read as cudagraph_graphs; on the CPU every "
            "graph's pieces",
        ),
        Col("generated_kernels", "", "kernels Inductor generated (distinct, from the output code)"),
        Col("generated_dir", "", "where the generated code lies, relative to the run dir"),
        Col(
            "speedup",
            "x",
            "a per-call latency ratio, NOT the speedup (that is speedup_paired): eager "
            "latency_median_us / this row's, from separate processes (same sweep, same shape); "
            "no interval. The report calls it the latency ratio",
        ),
        Col(
            "payback_calls",
            "calls",
            "compile_s / (eager - compiled latency), from the paired blocks' µs where the row "
            "has them (eager_latency_paired_us, compiled_latency_paired_us); empty when not faster",
        ),
        Col(
            "flops",
            "FLOP",
            "FLOPs per call, from the call itself: flop_counter on the float64 reference (matmul, "
            "convolution and attention ops; a multiply-add is 2; softmax, norms and elementwise ops "
            "are not counted), else the variant's own analytic formula, else empty (flops_note). "
            "Causal attention counts the full matrix, so a kernel that skips the masked half reads "
            "up to 2x high",
        ),
        Col(
            "flops_source",
            "",
            "flop_counter, analytic (the variant's own formula), or empty (flops_note says why)",
        ),
        Col(
            "flops_note",
            "",
            "why flops is empty, or why it is analytic rather than counted",
        ),
        Col(
            "flops_useful",
            "FLOP",
            "the part of flops the work needs: flops x the share of the S x S score matrix the "
            "mask keeps, counted by element (causal: S(S+1)/2 of S^2, about half), the same for "
            "naive, SDPA and flex. Equal to flops for every non-attention workload",
        ),
        Col(
            "flops_scheduled",
            "FLOP",
            "flex: flops x its block mask's density, 1 - block_sparsity (partial tiles count "
            "whole: the work its kernel is given, at least flops_useful). Blank elsewhere",
        ),
        Col(
            "bytes_min",
            "B",
            "bytes per call if every input is read once and every output written once",
        ),
        Col("arith_intensity", "FLOP/B", "flops / bytes_min"),
        Col("tflops", "TFLOP/s", "flops / latency_median_us"),
        Col(
            "tflops_useful",
            "TFLOP/s",
            "flops_useful / latency_median_us: the rate of the work the mask needs; this, not "
            "tflops, is what to hold against peak_tflops for masked attention",
        ),
        Col("gbps", "GB/s", "bytes_min / latency_median_us"),
        Col("tflops_device", "TFLOP/s", "flops / device_time_us"),
        Col("gbps_device", "GB/s", "bytes_min / device_time_us"),
        Col(
            "peak_tflops",
            "TFLOP/s",
            "measured matmul ceiling for this device, dtype and torch (study.measure.calibrate)",
        ),
        Col(
            "peak_gbps",
            "GB/s",
            "measured device copy bandwidth, read + write (study.measure.calibrate)",
        ),
        Col("pct_peak_compute", "%", "achieved TFLOP/s (device time when measured) / peak_tflops"),
        Col("pct_peak_bw", "%", "achieved GB/s (device time when measured) / peak_gbps"),
        Col("bound", "", "compute or memory, from arith_intensity against the ridge point"),
        Col("sdpa_choice", "", "backend torch._fused_sdp_choice predicts for the inputs"),
        Col(
            "block_mask_s",
            "s",
            "flex: wall time to build the block mask (create_block_mask), once, outside every "
            "timed region",
        ),
        Col(
            "block_sparsity",
            "%",
            "flex: share of score tiles the block mask skips (BlockMask.sparsity()); 0 without "
            "a mask",
        ),
        Col(
            "ncu_status",
            "",
            "ok, unavailable (with ncu's message in reason-like ncu_note) or empty when off",
        ),
        Col("ncu_note", "", "ncu's own message when unavailable"),
        Col(
            "nsys_status",
            "",
            "Nsight Systems pass: ok, unavailable, or empty when off (nsys.enabled)",
        ),
        Col("nsys_note", "", "the report file, or nsys's own message when unavailable"),
        Col("torch_version", "", "torch.__version__"),
        Col("triton_version", "", "triton.__version__"),
        Col("cuda_version", "", "torch.version.cuda"),
        Col("cudnn_version", "", "torch.backends.cudnn.version()"),
        Col("driver_version", "", "NVIDIA driver"),
        Col("device_name", "", "GPU name, or the CPU model"),
        Col("sm_clock_mhz", "MHz", "SM clock read at the start of the cell (nvidia-smi)"),
        Col("mem_clock_mhz", "MHz", "memory clock read at the start of the cell"),
        Col("cpu_threads", "", "torch.get_num_threads() (one per core the cell is pinned to)"),
        Col("cpu_cores", "", "CPU cores the cell was pinned to (cores=auto: one group per slot)"),
        Col(
            "timing_core",
            "",
            "the one core all of a CUDA cell's threads ran on while it was timed, profiled and "
            "shape-swept (timing.one_core); blank: they ran on any of cpu_cores",
        ),
        Col(
            "load_avg_1m",
            "",
            "host's 1-minute load average at the end of the timed phases",
        ),
        Col(
            "host_busy_other",
            "cores",
            "CPU time other processes took on the cell's cores during the timed phases, in "
            "cores (busy time from /proc/stat minus the cell's own)",
        ),
        Col(
            "host_steal",
            "cores",
            "CPU time the hypervisor gave the cell's virtual cores to others during the timed "
            "phases (steal, /proc/stat), in cores; 0 on bare metal",
        ),
        Col(
            "host_loaded",
            "bool",
            "the host was loaded while timing: host_busy_other or host_steal > 0.25 core, or "
            "load_avg_1m above the host's cores; host-bound numbers from such a row are suspect",
        ),
        Col(
            "host_probe_us",
            "us",
            "the host's own speed while the cell was timed: median time of 50 tiny CPU tensor "
            "additions, probed before and after the timed phases (study.measure.host_load); it moves "
            "between processes when the host's own speed does (on the H200's VM: 2.3x over one "
            "session), and host-bound latencies move with it",
        ),
        Col("cpu_governor", "", "CPU frequency governor of the cell's first core, where readable"),
        Col("host", "", "host name"),
        Col(
            "boot_id",
            "",
            "the machine's boot (first 8 hex of /proc/sys/kernel/random/boot_id, '-' where "
            "unreadable): rows with one boot_id ran on one machine. Every H200 VM is called "
            '"vm", and their hosts run at their own speeds (v3: fast levels 9.7-13.5 µs)',
        ),
        Col("python_version", "", "Python version"),
        Col("git_rev", "", "the study's git revision (-dirty when modified)"),
        Col(
            "code_hash",
            "",
            "sha256 (12 hex) of the measuring code on disk (study/*.py, conf/*.yaml, "
            "hydra_plugins/*.py): rows with one code_hash ran the same code, whatever git_rev says",
        ),
        Col("started_at", "", "UTC time the cell started"),
        Col(
            "wall_s",
            "s",
            "wall time of the cell inside its process (torch import and process start excluded)",
        ),
        Col(
            "prepare_s",
            "s",
            "wall time from the sweep asking for the cell to the forked cell starting its work "
            "(the warm parent imported torch, Dynamo and Inductor once per sweep process)",
        ),
        Col(
            "gpu_wait_s",
            "s",
            "wall time waiting for a free slot (a GPU or a core group) before the cell "
            "started; not counted against timeout_s",
        ),
        Col(
            "overhead_s",
            "s",
            "the sweep's own cost of this cell: wall time from asking for it to its row being "
            "written, minus gpu_wait_s, first_call_s (compile), check_s, measure_s, profile_s "
            "and extra_s: process start, setup (CUDA context, inputs), generated code, rows",
        ),
        Col(
            "gpu_index",
            "",
            "GPU slot's GPU under the gpus launcher (CUDA_VISIBLE_DEVICES, proven by UUID); "
            "blank otherwise: a one-GPU sweep's cell sees only the first visible GPU",
        ),
        Col("setup_s", "s", "wall time before the first call: environment, inputs, CUDA init"),
        Col("check_s", "s", "wall time of the float64 reference check and FLOP count"),
        Col(
            "measure_s",
            "s",
            "wall time of the steady-state timing phases (warm-up, per-call latency, device time)",
        ),
        Col("profile_s", "s", "wall time of the profiler pass, trace parsing and proof included"),
        Col(
            "extra_s",
            "s",
            "wall time of the cell's passes beyond the timed method: tensors saved for backward, "
            "a shape_sweep, Nsight Compute/Systems",
        ),
        Col("trace_file", "", "profiler trace, relative to the run dir (opens in Perfetto)"),
    ]
)

KERNEL = [
    Col("run_id", "", "the run the kernel belongs to"),
    Col("variant", "", "see runs"),
    Col("compile", "", "see runs"),
    Col("device", "", "see runs"),
    Col("dtype", "", "see runs"),
    Col("kernel", "", "full kernel name (CPU: aten op or generated C++ kernel)"),
    Col("kernel_short", "", "readable short form of the name"),
    Col(
        "kernel_class",
        "",
        "gemm_cublas, gemm_cutlass, gemm_cpu, triton_pointwise, triton_reduction, triton_persistent_reduction, triton_template, triton_other, cpp_generated, flash, mem_efficient, cudnn, softmax, aten_reduction, copy, memset, aten_elementwise, other",
    ),
    Col("phase", "", "fwd, bwd or optim: the part of the pass that launched it (study::* ranges)"),
    Col("generated", "bool", "Inductor generated it"),
    Col(
        "inductor_kind",
        "",
        "pointwise, reduction, persistent_reduction, template, foreach, cpp, or extern (library call from compiled code)",
    ),
    Col("calls_per_step", "", "launches per step (integer when every step does the same)"),
    Col("calls_consistent", "bool", "same count in every step"),
    Col("us_per_step", "us", "device time per step (CPU: self time)"),
    Col("mean_us", "us", "mean duration of one launch"),
    Col("min_us", "us", "min duration"),
    Col("max_us", "us", "max duration"),
    Col("share", "", "share of the step's kernel time (0-1)"),
    Col("grid", "", "launch grid, as the trace records it"),
    Col("block", "", "block size"),
    Col("registers_per_thread", "", "registers per thread"),
    Col("shared_mem_bytes", "B", "shared memory per block"),
    Col(
        "occupancy_pct",
        "%",
        "profiler's static estimate of achieved occupancy; empty when unknown (0 from cuLaunchKernelEx is unknown)",
    ),
    Col("graph_launched", "bool", "replayed from a CUDA graph"),
    Col("cpu_op", "", "innermost CPU op around the launch (aten op or compiled wrapper)"),
    Col("cpu_region", "", "compiled region around the launch, if any"),
    Col(
        "launches_per_op_call",
        "",
        "launches of this kernel per call of its launching CPU op (median over steps); above 1, "
        "one op call split its work (e.g. TensorIterator's 32-bit indexing over 2^31 elements)",
    ),
    Col(
        "op_max_input_numel",
        "",
        "elements of the launching op's largest input (profiler record_shapes), one call",
    ),
    Col("source_file", "", "generated source of the kernel, relative to the run dir"),
    Col("fused_ops", "", "aten ops fused into it (Inductor provenance or origin comments)"),
]

AUTOTUNE = [
    Col("run_id", "", "see runs"),
    Col("op_id", "", "index of the tuned op in the run"),
    Col("op", "", "the tuned op (mm, addmm, bmm, ...)"),
    Col("input_shapes", "", "shapes of its inputs"),
    Col("choice", "", "candidate kernel (extern cuBLAS or a Triton template config)"),
    Col("description", "", "the candidate's parameters"),
    Col("time_us", "us", "benchmarked time"),
    Col("winner", "bool", "the fastest choice, which Inductor took"),
]

REVEALED = KEYS + [
    Col("kernels_per_step", "", "see runs"),
    Col("latency_median_us", "us", "see runs"),
    Col("speedup", "x", "see runs"),
    Col("surprises", "", "see runs: broken predictions; rows with any come first"),
    Col(
        "revealed",
        "",
        "what the trace revealed, '; '-joined: first each broken prediction ('surprise: ...'), "
        "then the named rules that fired",
    ),
]

NCU = [
    Col("run_id", "", "see runs"),
    Col("variant", "", "see runs"),
    Col("compile", "", "see runs"),
    Col("kernel", "", "kernel name as ncu reports it"),
    Col("kernel_match", "", "the kernels.csv kernel it maps to"),
    Col("launch", "", "ncu's launch index"),
    Col("section", "", "ncu section"),
    Col("metric", "", "metric name"),
    Col("unit", "", "ncu's unit"),
    Col("value", "", "value as a number when it parses (occupancy_limiter: the limiting resource)"),
]

SHAPES = [
    Col("run_id", "", "see runs"),
    Col("variant", "", "see runs"),
    Col("compile", "", "see runs"),
    Col("dynamic", "", "compile.dynamic: False (specialise), True, or mark (mark_dynamic)"),
    Col("pass", "", "see runs"),
    Col("key", "", "the shape key the cell swept in one process (shape_sweep.key)"),
    Col("value", "", "its value at this step of the sweep"),
    Col("order", "", "position in the sweep (0 = the first shape the cell compiled)"),
    Col("first_call_s", "s", "first call at this shape: a compile or recompile when one happened"),
    Col("compiled", "bool", "Dynamo compiled a frame for this shape (a recompile after the first)"),
    Col("graphs", "", "graphs Dynamo captured so far in the cell (cumulative)"),
    Col("recompiles", "", "recompilations so far in the cell (cumulative)"),
    Col("recompile_reason", "", "why Dynamo recompiled at this shape (its guard failure)"),
    Col("latency_median_us", "us", "per-call latency at this shape, median"),
    Col("latency_p10_us", "us", "10th percentile"),
    Col("latency_p90_us", "us", "90th percentile"),
    Col("status", "", "ok, mismatch (the output at this shape against float64), or error"),
    Col("reason", "", "why not ok"),
]

TABLES = {
    "runs": RUN,
    "kernels": KERNEL,
    "autotune": AUTOTUNE,
    "revealed": REVEALED,
    "ncu": NCU,
    "shapes": SHAPES,
}
FILES = {
    "runs": "run.csv (one row per cell) and runs.csv (one row per cell of a sweep)",
    "kernels": "kernels.csv (one row per distinct kernel per run)",
    "autotune": "autotune.csv (max-autotune: one row per benchmarked choice)",
    "revealed": "revealed.csv (a sweep's blog table: what each trace revealed)",
    "ncu": "ncu.csv (Nsight Compute: one row per kernel x metric)",
    "shapes": "shapes.csv (shape_sweep: one row per shape a cell ran in one process)",
}


def columns(table: str) -> list[str]:
    return [c.name for c in TABLES[table]]


def unit(table: str, name: str) -> str | None:
    """A column's unit ('bool' for booleans), None when the table has no such column."""
    return next((c.unit for c in TABLES[table] if c.name == name), None)


# The columns of runs.csv a person reads first, in reading order: SCHEMA.md opens with them.
FIRST = (
    "variant",
    "compile",
    "device",
    "status",
    "reason",
    "speedup_paired",
    "speedup_ci_low",
    "speedup_ci_high",
    "latency_median_us",
    "kernels_per_step",
    "device_time_us",
    "host_us",
)


def markdown() -> str:
    out = [
        "# Schema",
        "",
        "Every CSV the study writes. Generated by `python -m study.rows.schema > SCHEMA.md`;",
        "`tests/test_schema.py` fails when this file and `study/rows/schema.py` disagree.",
        "Empty cells mean unknown or not applicable, never zero. A text cell that begins with",
        "`=`, `+`, `-`, `@`, a tab or a carriage return (and is no number) is written with a",
        "leading `'`, so that a spreadsheet opening the CSV shows it as text instead of running",
        "it as a formula: a variant named `=1+1` reads `'=1+1`. The analysis takes the `'` off",
        "where it reads the CSVs (its report and console show `=1+1`) and puts it back in those",
        "it writes.",
        "",
        "## Read these first",
        "",
        "The 12 runs.csv columns that answer the question, in reading order. The speedup is",
        "`speedup_paired`; `speedup` is a per-call latency ratio from separate processes.",
        "",
        "| column | unit | meaning |",
        "| --- | --- | --- |",
    ]
    run = {c.name: c for c in TABLES["runs"]}
    out += [f"| `{n}` | {run[n].unit} | {run[n].meaning} |" for n in FIRST]
    out.append("")
    for table, cols in TABLES.items():
        out += [f"## {FILES[table]}", "", "| column | unit | meaning |", "| --- | --- | --- |"]
        out += [f"| `{c.name}` | {c.unit} | {c.meaning} |" for c in cols]
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(), end="")

# runs.csv columns that hold text or booleans (everything else is a number): analysis.load
# reads these as they are, study.rows.expect checks them as text or true/false.
NON_NUMERIC = frozenset(
    {
        "run_id",
        "variant",
        "family",
        "compile",
        "device",
        "dtype",
        "status",
        "reason",
        "notes",
        "fullgraph",
        "dynamic",
        "inductor_patches",
        "timing_overrides",
        "cache",
        "start",
        "artifacts_loaded",
        "backend_expected",
        "backend_seen",
        "backend_proof",
        "latency_method",
        "device_time_method",
        "kernels_by_class",
        "steps_consistent",
        "cpu_bound",
        "dominant_kernel",
        "graph_launched",
        "graph_break_reasons",
        "graph_break_codes",
        "compile_log",
        "tlparse_index",
        "recompile_reasons",
        "cudagraph_skip_reasons",
        "generated_dir",
        "flops_source",
        "flops_note",
        "mask",
        "score_mod",
        "bound",
        "sdpa_choice",
        "ncu_status",
        "ncu_note",
        "torch_version",
        "triton_version",
        "cuda_version",
        "cudnn_version",
        "driver_version",
        "device_name",
        "host",
        "boot_id",
        "python_version",
        "git_rev",
        "code_hash",
        "started_at",
        "trace_file",
        "causal",
        "gpu_index",
        "pass",
        "regime",
        "model_kind",
        "model_library",
        "host_status",
        "eager_host_status",
        "config_hash",
        "eager_hash",
        "host_bound",
        "device_time_l2",
        "cpu_cores",
        "timing_core",
        "cpu_governor",
        "host_loaded",
        "grad_worst",
        "mem_source",
        "kernels_by_phase",
        "compiled_autograd",
        "freezing",
        "compile_stance",
        "regional",
        "regional_method",
        "regional_block",
        "target_proof",
        "nsys_status",
        "nsys_note",
        "timing_phase",
        "gauge_level_source",
        "gauge_held",
        "expect",
        "surprise_detail",
    }
)
