#!/usr/bin/env bash
# The reference study behind results/h200 and the README's Findings (issue 8), on a 2-GPU host.
#   bash benchmarks/reference_study.sh parts OUTDIR     # calibrate, then part1, part2, part3
#   bash benchmarks/reference_study.sh scaling OUTDIR   # attention over seq_len 512..32768
#   bash benchmarks/reference_study.sh ncu OUTDIR       # Nsight Compute on flash and naive
#   bash benchmarks/reference_study.sh resume OUTDIR NAME [OVERRIDES]  # finish a cut sweep
#   bash benchmarks/reference_study.sh probe OUTDIR     # which imports initialise CUDA (pin_probe)
# Then, here:  python -m analysis.report OUTDIR/*/sweeps/* --out results/h200
#              python -m analysis.findings results/h200   # the README's Findings block
# Four jobs on two GPUs: each cell imports torch while another holds its GPU (study.worker).
# LIMIT=SECONDS stops the stage by then (each sweep runs under `timeout`; finished cells keep
# their rows), so a device command can still pack the results: on nvidia-h200-x2, part3 took
# about 5 min, part1 + part2 about 2.5 min, scaling about 9 min; `resume OUT NAME` finishes a
# cut sweep.
set -uo pipefail
stage=$1; out=$(realpath -m "$2"); mkdir -p "$out"
deadline=$((SECONDS + ${LIMIT:-86400}))
export STUDY_CEILINGS=$out/ceilings.json PYTHONUNBUFFERED=1
GPUS=$(python3 -c "import torch; print(torch.cuda.device_count())")
NJ=${NJ:-$((GPUS > 0 ? 2 * GPUS : 1))}
t() { local s=$SECONDS; "$@"; echo "WALL $((SECONDS - s)) s: $*"; }
limited() {  # SECONDS CMD...: run CMD in its own process group, kill the group at SECONDS
  local left=$1; shift
  setsid "$@" &
  local pid=$!
  # The watcher writes nowhere (its sleep would hold the tee pipe open until LIMIT) and takes
  # its sleep down with it when the sweep ends first.
  ( sleep "$left" & s=$!; trap 'kill $s; exit' TERM; wait $s
    kill -TERM -- -"$pid"; sleep 10; kill -KILL -- -"$pid" ) >/dev/null 2>&1 &
  local watch=$!
  wait "$pid"; local rc=$?
  kill "$watch" 2>/dev/null
  return $rc
}
sweep() {  # NAME EXTRA...
  local name=$1; shift
  local left=$((deadline - SECONDS))
  if [ "$left" -le 10 ]; then echo "LIMIT reached: $name not started"; return; fi
  t limited "$left" python3 -m study.run -m hydra/launcher=gpus hydra.launcher.n_jobs="$NJ" \
    out_root="$out/$name" "$@" 2>&1 | tee -a "$out/$name.log" | grep -E '^\[study\]|Error|error:'
}
case $stage in
  parts)
    t python3 -m study.calibrate dtypes=[bf16,fp16,fp32]
    # Pinning check: 4 tiny cells on the GPUs; a cell that saw every GPU fails loudly.
    # With one GPU every cell is on it anyway (each still checks its device's UUID).
    [ "$GPUS" -gt 1 ] && sweep pin variant=naive,flash compile=off,default +experiment=tiny
    if [ "$GPUS" -gt 1 ] && grep -rq "GPU pinning failed" "$out/pin"; then
      NJ=$GPUS; set -- overlap_startup=false; echo "pinning failed: n_jobs=$NJ, overlap_startup=false"
    else set --; fi
    sweep part3 +experiment=part3 "$@"
    sweep part1 +experiment=part1 "$@"
    sweep part2 +experiment=part2 "$@"
    ;;
  scaling)
    sweep scaling +experiment=scaling
    ;;
  ncu)
    sweep ncu variant=flash,naive compile=off,default ncu.enabled=true
    ;;
  probe)
    t python3 benchmarks/pin_probe.py | tee "$out/pin_probe.txt"
    ;;
  resume)  # resume OUTDIR NAME [OVERRIDES...]
    name=$3; shift 3
    sweep "$name" +experiment="$name" resume=true "$@"
    ;;
esac
