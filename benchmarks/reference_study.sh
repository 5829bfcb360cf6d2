#!/usr/bin/env bash
# The reference study behind results/h200 and the README's Findings (issue 8), on a 2-GPU host.
#   bash benchmarks/reference_study.sh parts OUTDIR     # calibrate, then part1, part2, part3
#   bash benchmarks/reference_study.sh scaling OUTDIR   # attention over seq_len 512..32768
#   bash benchmarks/reference_study.sh ncu OUTDIR       # Nsight Compute on flash and naive
#   bash benchmarks/reference_study.sh resume OUTDIR NAME  # finish an interrupted sweep
# Then, here:  python -m analysis.report OUTDIR/*/sweeps/* --out results/h200
#              python -m analysis.findings results/h200   # the README's Findings block
# Four jobs on two GPUs: each cell imports torch while another holds its GPU (study.worker).
set -uo pipefail
stage=$1; out=$(realpath -m "$2"); mkdir -p "$out"
export STUDY_CEILINGS=$out/ceilings.json PYTHONUNBUFFERED=1
GPUS=$(python3 -c "import torch; print(torch.cuda.device_count())")
NJ=${NJ:-$((2 * GPUS))}
t() { local s=$SECONDS; "$@"; echo "WALL $((SECONDS - s)) s: $*"; }
sweep() {  # NAME EXTRA...
  local name=$1; shift
  t python3 -m study.run -m hydra/launcher=gpus hydra.launcher.n_jobs="$NJ" out_root="$out/$name" "$@" \
    2>&1 | tee -a "$out/$name.log" | grep -E '^\[study\]|Error|error:'
}
case $stage in
  parts)
    t python3 -m study.calibrate dtypes=[bf16,fp16,fp32]
    # Pinning check: 4 tiny cells on the GPUs; a cell that saw every GPU fails loudly.
    sweep pin variant=naive,flash compile=off,default +experiment=tiny
    if grep -rq "GPU pinning failed" "$out/pin"; then
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
  resume)
    sweep "$3" +experiment="$3" resume=true
    ;;
esac
