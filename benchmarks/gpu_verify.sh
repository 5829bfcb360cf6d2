#!/usr/bin/env bash
# The GPU verification runs behind benchmarks/README.md's figures and the issues' closing notes.
#   bash benchmarks/gpu_verify.sh STAGE OUTDIR      (STAGE: lifecycle | training | rungs | features | parallel | serial)
# lifecycle: calibrate; the quickstart's wall time; linear, cuDNN and flash under default, and
#            flash, cuDNN and naive eager, 5 fresh processes each (benchmarks/stability.py);
#            part3's wall time and overhead (benchmarks/throughput.py).
# training:  calibrate, the quickstart's wall time, part3's attention with pass=fwd_bwd in all
#            five modes, part2 with pass=train_step.
# rungs:     the transformer block (fwd in all five modes, fwd_bwd), dynamic shapes over
#            seq_len 512-4096, and FlexAttention against flash, cuDNN and efficient (causal at
#            1k/4k/16k; flex's sliding window over the same lengths).
# SNAP=FILE.tgz packs OUTDIR (no traces, no generated code) after every step.
# features: attention x off,default,reduce-overhead; naive,mlp x max-autotune-no-cudagraphs;
#           an OOM in the middle of a sweep; ncu on the top kernels; the harness benchmark.
# parallel / serial: the core 18-cell sweep, on 2 GPUs with hydra/launcher=gpus, or on one.
set -uo pipefail
stage=$1; out=$2; mkdir -p "$out"
export PYTHONUNBUFFERED=1
C=$out/ceilings.json; CAL=calibration_file=$C  # the ceilings every calibration and cell uses
V=matmul_add,linear,mlp,naive,naive_inplace,math,efficient,flash,cudnn
ATT=naive,naive_inplace,math,efficient,flash,cudnn,sdpa
t() { local s=$SECONDS; "$@"; echo "WALL $((SECONDS - s)) s: $*"; snap; }
snap() { [ -n "${SNAP:-}" ] && tar czf "$SNAP" --exclude='*.json.gz' --exclude=generated \
  --exclude=.compile_cache --exclude='*.lock' -C "$(dirname "$out")" "$(basename "$out")"; true; }
Q='HYDRA|USDT|W11|debug trace'
run() { local lim=$1; shift; timeout "$lim" python3 -m study.run -m "$@" "$CAL" 2>&1 | grep -v -E "$Q"; }
case $stage in
  training)
    t python3 -m study.measure.calibrate dtypes=[bf16] "$CAL"
    t timeout 60 python3 benchmarks/throughput.py quickstart --out "$out/tp" -- "$CAL" 2>&1 | grep -v -E "$Q|\] \["
    t run 240 +experiment=part3 pass=fwd_bwd variant=flash,cudnn,efficient,math,naive out_root="$out/p3bwd"
    t run 120 +experiment=part2 pass=train_step out_root="$out/p2train"
    ;;
  rungs)
    [ -s "$C" ] || t python3 -m study.measure.calibrate dtypes=[bf16] "$CAL"
    t run 75 variant=block compile=off,default,reduce-overhead,max-autotune,max-autotune-no-cudagraphs out_root="$out/block"
    t run 40 variant=block pass=fwd_bwd compile=off,default out_root="$out/blockbwd"
    t run 60 +experiment=dynamic variant=naive,flash out_root="$out/dynamic"
    t run 70 +experiment=flex shape.seq_len=16384,4096,1024 family.mask=causal out_root="$out/flex"
    t run 30 +experiment=flex shape.seq_len=16384,4096,1024 family.mask=sliding_window variant=flex out_root="$out/flexsw"
    ;;
  lifecycle)
    t python3 -m study.measure.calibrate dtypes=[bf16] "$CAL"
    t python3 benchmarks/throughput.py quickstart --out "$out/tp" -- "$CAL" 2>&1 | grep -v -E 'HYDRA|USDT|W11|debug trace'
    t python3 benchmarks/stability.py --repeats 5 --out "$out/stab" -- "$CAL" 2>&1 | grep -v -E 'HYDRA|USDT|W11|debug trace'
    t python3 benchmarks/throughput.py part3 --out "$out/tp" -- "$CAL" 2>&1 | grep -v -E 'HYDRA|USDT|W11|debug trace|\[study\] \['
    ;;
  features)
    t python3 -m study.measure.calibrate dtypes=[bf16,fp16,fp32] "$CAL"
    t python3 -m study.run -m hydra/launcher=gpus hydra.launcher.n_jobs=2 variant=$ATT \
      compile=off,default,reduce-overhead out_root=$out/attn timeout_s=300 "$CAL" | grep '\[study\]'
    t python3 -m study.run -m hydra/launcher=gpus hydra.launcher.n_jobs=2 variant=naive,mlp \
      compile=default,max-autotune-no-cudagraphs out_root=$out/autotune timeout_s=400 "$CAL" | grep '\[study\]'
    t python3 -m study.run -m variant=naive compile=off shape.seq_len=1024,131072,2048 \
      out_root=$out/oom "$CAL" | grep '\[study\]'
    t python3 -m study.run -m hydra/launcher=gpus hydra.launcher.n_jobs=2 variant=flash,naive,cudnn \
      compile=off,default ncu.enabled=true nsys.enabled=true out_root=$out/ncu "$CAL" | grep '\[study\]'
    t python3 benchmarks/harness.py 5 2>&1 | grep -v -E 'USDT|Warning'
    ;;
  parallel)
    t python3 -m study.run -m hydra/launcher=gpus hydra.launcher.n_jobs=2 variant=$V compile=off,default \
      out_root=$out/par timeout_s=300 "$CAL" | grep '\[study\]'
    ;;
  serial)
    t python3 -m study.run -m variant=$V compile=off,default out_root=$out/ser timeout_s=300 "$CAL" | grep '\[study\]'
    ;;
esac
for d in "$out"/*/sweeps/*; do [ -d "$d" ] && python3 -m analysis.report "$d" | head -3; done
