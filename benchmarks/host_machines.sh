#!/usr/bin/env bash
# One machine's share of the host-cost study (benchmarks/host_model.py reads several of them):
#   bash benchmarks/host_machines.sh OUTDIR [PROBE.py] [--cuda-tests]
# Writes OUTDIR/machine.md (boot id, CPU), survey.md (python -m study.measure.host_gauge: the host's fast
# level and how much of the time it held it), probe.md (an independent host-time probe, when
# given: it queues GPU sleep and times issuing calls, as study.measure.host_cost does), and one
# sweep dir under OUTDIR/sweeps: the host-bound ladder (linear, cuDNN, sdpa, flash, the block,
# matmul+bias n=64), eager and default. Then packs OUTDIR into OUTDIR.tgz (no traces, no code).
set -uo pipefail
out=$1; probe=${2:-}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
  echo "boot_id $(cat /proc/sys/kernel/random/boot_id)"
  echo "cores $(nproc)"
  lscpu | grep -E "Model name|Hypervisor" || true
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
} > "$out/machine.md"
cat "$out/machine.md"
python3 -m study.measure.host_gauge 10 | tee "$out/survey.md"
if [ -n "$probe" ]; then python3 "$probe" 2>&1 | grep -v Warning | tee "$out/probe.md"; fi
q='HYDRA|USDT|W11|debug trace'
python3 -m study.run -m variant=linear,cudnn,sdpa,flash,block compile=off,default \
  out_root="$out" 2>&1 | grep -v -E "$q"
python3 -m study.run -m variant=matmul_add shape.n=64 compile=off,default out_root="$out" \
  2>&1 | grep -v -E "$q"
python3 -m study.measure.host_gauge 5 | tee -a "$out/survey.md"  # the host after the cells
tar czf "$out.tgz" --exclude='*.json.gz' --exclude=generated --exclude=.compile_cache \
  --exclude='*.lock' -C "$(dirname "$out")" "$(basename "$out")"
