#!/usr/bin/env bash
# The host-cost layer of reference/h200: the reference experiments again, on one machine, with
# every row's host us and host units measured (study.measure.host_cost), to restate FINDINGS.md's
# host-bound claims from measured host time instead of latency differences.
#   bash benchmarks/host_reference.sh OUTDIR SET...
# SETs: parts (part1, part2, part3 under off, default and max-autotune-no-cudagraphs: every fwd
# cell of the ladder, 33 cells), train (flash and cuDNN fwd_bwd, eager and default, behind 5 and
# 40 ms of queued GPU sleep: does a training step's host time depend on how deep the queue is?),
# models (gpt2, bert fwd, off and default), block (the block fwd, off and default), targets
# (linear and cuDNN under off, dynamo_eager, aot_eager, default, cpp_wrapper: one layer each),
# stability (benchmarks/stability.py --repeats 2 on four cells), probe (benchmarks/host_vs_probe.py:
# the study's host us against an independent probe's, in one process); what compiling costs
# before the first fast call: start (naive, mlp, the block and GPT-2 under default, start=cold,
# warm and artifacts), guards (linear, cuDNN and GPT-2 under default, guards evaluated and
# skipped: compile.stance), cudagraphs (part3 under reduce-overhead: did CUDA graphs apply?),
# regional (the block at 4, 12 and 24 layers, GPT-2 and BERT at 12: whole model against
# compile.regional=true, under default); the model suite (+experiment=suite): suite_check
# (four models, both regimes, eager and default), suite_latency, suite_throughput (forward:
# eager, default, reduce-overhead), suite_autotune (max-autotune-no-cudagraphs, both regimes),
# suite_train (train_step, eager and default), suite_text (the Llama's decode step and
# the five language models' throughput regime); quickstart; part3 (+experiment=part3).
# Each sweep goes to OUTDIR/<SET>; OUTDIR/machine.md has the boot id, survey.md the host's
# gauge before and after, ceilings.json its measured ceilings, host_check.md the worst host/latency ratios (benchmarks/host_check.py),
# suite.md the suite's answer (python -m analysis.tables suite). LIMIT=SECONDS stops by then; the whole of OUTDIR (no traces, no code)
# is packed into OUTDIR.tgz at the end, and every 60 s when SNAP=1.
set -uo pipefail
out=$(realpath -m "$1"); shift; mkdir -p "$out"
export PYTHONUNBUFFERED=1
deadline=$((SECONDS + ${LIMIT:-86400}))
pack() {
  tar czf "$out.tgz.part" --exclude='*.json.gz' --exclude=generated --exclude=compile_log --exclude=.compile_cache \
    --exclude='*.lock' -C "$(dirname "$out")" "$(basename "$out")" 2>/dev/null \
    && mv -f "$out.tgz.part" "$out.tgz"
}
if [ -n "${SNAP:-}" ]; then
  ( trap exit TERM; while :; do sleep 60 & wait $!; pack; done ) >/dev/null 2>&1 &
  snapper=$!
  trap 'kill $snapper 2>/dev/null; pack' EXIT
else
  trap pack EXIT
fi
{
  echo "boot_id $(cat /proc/sys/kernel/random/boot_id)"
  echo "cores $(nproc)"
  lscpu | grep -E "Model name|Hypervisor" || true
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
  # the code hash, not git's commit: a copied working tree (the device) may carry a stale .git
  python3 -c "from study.config.env import code_hash; print('code_hash', code_hash())"
} > "$out/machine.md"
cat "$out/machine.md"
# this GPU's measured ceilings beside its rows (analysis.tables predict --to, compare across GPUs)
python3 -m study.measure.calibrate calibration_file="$out/ceilings.json" 2>&1 | tail -3 \
  || echo "calibrate failed: no ceilings.json"
python3 -m study.measure.host_gauge 10 | tee "$out/survey.md"
q='^\[study\]|Error|error:'
sweep() {  # NAME OVERRIDES...: one sweep into OUTDIR/NAME, cut at the deadline
  local name=$1; shift
  local left=$((deadline - SECONDS))
  if [ "$left" -lt 20 ]; then echo "skipped $name: the deadline"; return; fi
  local s=$SECONDS
  timeout -s TERM -k 10 "$left" python3 -m study.run -m out_root="$out/$name" "$@" 2>&1 \
    | tee -a "$out/$name.log" | grep -E "$q"
  echo "WALL $((SECONDS - s)) s: $name $*"
}
for set in "$@"; do
  case $set in
    parts)
      for p in part3 part2 part1; do
        sweep $p +experiment=$p compile=off,default,max-autotune-no-cudagraphs
      done ;;
    train)
      sweep train variant=flash,cudnn compile=off,default pass=fwd_bwd timing.host_sleep_ms=5,40 ;;
    models)
      sweep models variant=gpt2,bert compile=off,default ;;
    block)
      sweep block variant=block compile=off,default ;;
    start)
      sweep start variant=naive,mlp,block,gpt2 compile=default start=cold,warm,artifacts ;;
    guards)
      sweep guards variant=linear,cudnn,gpt2 compile=default \
        compile.stance=default,skip_guard_eval_unsafe ;;
    regional)
      sweep regional_block variant=block shape.layers=4,12,24 compile=default \
        compile.regional=false,true
      sweep regional_models variant=gpt2,bert +variant.kwargs.layers=12 compile=default \
        compile.regional=false,true ;;
    cudagraphs)
      sweep cudagraphs +experiment=part3 compile=reduce-overhead ;;
    quickstart)
      sweep quickstart variant=naive,flash compile=off,default ;;
    part3)  # the blog's part 3 as benchmarks/throughput.py runs it: 7 variants x 5 modes
      sweep part3 +experiment=part3 ;;
    suite_check)  # four models in both regimes, eager and default: the host figures' check
      sweep suite_check +experiment=suite variant=gpt2,bert,resnet18,convnext_t \
        compile=off,default pass=fwd timing.max_s=3 ;;
    suite_latency)  # the suite's decode-sized calls: eager, default, CUDA graphs
      sweep suite_latency +experiment=suite regime=latency \
        compile=off,default,reduce-overhead timing.max_s=3 ;;
    suite_throughput)
      sweep suite_throughput +experiment=suite regime=throughput pass=fwd \
        compile=off,default,reduce-overhead timing.max_s=3 ;;
    suite_text)  # the Llama's decode step, then the five language models' throughput regime
      sweep suite_llama +experiment=suite regime=latency variant=llama \
        compile=off,default,reduce-overhead timing.max_s=3
      sweep suite_text +experiment=suite regime=throughput variant=gpt2,llama,bert,distilbert,t5 \
        pass=fwd compile=off,default,reduce-overhead timing.max_s=3 ;;
    suite_autotune)  # max-autotune-no-cudagraphs, both regimes (each cell times its eager twin)
      sweep suite_autotune +experiment=suite compile=max-autotune-no-cudagraphs pass=fwd \
        timing.max_s=3 ;;
    suite_train)
      sweep suite_train +experiment=suite regime=throughput pass=train_step \
        compile=off,default timing.max_s=3 ;;
    targets)
      sweep targets variant=linear,cudnn compile=off,dynamo_eager,aot_eager,default,cpp_wrapper ;;
    stability)
      left=$((deadline - SECONDS))
      [ "$left" -gt 60 ] && timeout -s TERM -k 10 "$left" python3 benchmarks/stability.py \
        --cells linear/default,cudnn/default,linear/off,cudnn/off --repeats 2 --out "$out/stability" \
        2>&1 | tee "$out/stability.md" | grep -v -E 'HYDRA|Warning' ;;
    probe)
      left=$((deadline - SECONDS))
      [ "$left" -gt 40 ] && timeout -s TERM -k 10 "$left" python3 benchmarks/host_vs_probe.py \
        2>&1 | tee "$out/vs_probe.md" ;;
    *) echo "unknown SET $set"; exit 2 ;;
  esac
done
python3 -m study.measure.host_gauge 5 | tee -a "$out/survey.md"  # the host after the cells
# every ok CUDA row's host figure against its latency (the worst ratios), and the suite's answer
mapfile -t runs < <(find "$out" -mindepth 2 -maxdepth 2 -name runs.csv)
[ "${#runs[@]}" -gt 0 ] && python3 benchmarks/host_check.py "${runs[@]}" | tee "$out/host_check.md"
mapfile -t suites < <(find "$out" -mindepth 2 -maxdepth 2 -path "*suite*" -name runs.csv -printf "%h\n")
[ "${#suites[@]}" -gt 0 ] && python3 -m analysis.tables suite "${suites[@]}" > "$out/suite.md" 2>&1
