#!/usr/bin/env bash
# The reference study behind reference/h200 and its FINDINGS.md, on 1 or 2 GPUs.
#   bash benchmarks/reference_study.sh parts OUTDIR     # calibrate, then part3, part1, part2
#   bash benchmarks/reference_study.sh scaling OUTDIR   # attention over seq_len 32768..512
#   bash benchmarks/reference_study.sh rest OUTDIR      # part2, then scaling (reference/h200 lacks)
#   bash benchmarks/reference_study.sh ncu OUTDIR       # Nsight Compute on flash and naive
#   bash benchmarks/reference_study.sh resume OUTDIR NAME [OVERRIDES]  # finish a cut sweep (EXP=part3 pass=fwd_bwd for NAME=part3_bwd)
#   bash benchmarks/reference_study.sh probe OUTDIR     # may the warm parent import all it does? (fork_probe)
# v2, in three device commands of under 10 minutes each, all on one H200 unless
# NJ says otherwise:
#   bash benchmarks/reference_study.sh v2-parts OUTDIR  # calibrate; part3, part1, part2; then
#        the host-bound cells of the three again in 2 more fresh processes (repeat=1,2, into
#        the same sweep dirs: the analysis takes the median over repeats and quotes the spread)
#   bash benchmarks/reference_study.sh v2-train OUTDIR  # the block (fwd, fwd_bwd) in all five
#        modes; part3 pass=fwd_bwd; part2 pass=train_step; the dynamic-shape sweep
#   bash benchmarks/reference_study.sh v2-flex OUTDIR   # +experiment=flex, then scaling
# v3, one code revision (every row's code_hash the same) over several sessions:
#   bash benchmarks/reference_study.sh v3 OUTDIR NAME...  # each NAME in turn, resume=true: a
#        NAME whose cells are all ok already is skipped cell by cell; NAMEs: part3 part1 part2
#        (repeats=3: every cell in 3 fresh processes), block block_bwd part3_bwd part2_train
#        dynamic flex scaling targets (no aot_inductor: it segfaults in its loader on this
#        image) targets_bwd (fwd_bwd of flash, cuDNN and the block under eager, dynamo_eager,
#        aot_eager and default) models. It runs python -m study.measure.host_gauge first, and calibrates when OUTDIR has no
#        ceilings.json. Carry the unpacked SNAP of the last command as OUTDIR to go on.
#   bash benchmarks/reference_study.sh v3-check OUTDIR  # part3 fwd_bwd, flash and cuDNN, 4 modes,
#        2 processes each: are training rows' paired and per-call ratios within 3%? (~1.5 min)
#   v3, v3-check and resume survey the host first (up to SURVEYS=4 times) and stop (exit 3) where
#   its gauge's fast level stays above FULL_US (14.5 us): a reference study runs at full speed.
#   v3 records one more survey before each later experiment (phase.txt), without stopping.
#   bash benchmarks/reference_study.sh v3-preflight OUTDIR  # benchmarks/pair_probe.py (flash with
#        threads spread and on one core, cuDNN and max-autotune-no-cudagraphs on one core), then part3
#        fwd_bwd flash and cuDNN under 4 modes (2 processes each), fwd for 3 variants, and fwd_bwd once
#        more with timing.one_core=false (~7 min)
# Then, here:  bash benchmarks/reference_study.sh assemble OUTDIR NEW   # audit + report into NEW
#              bash benchmarks/reference_study.sh land NEW reference/h200 v3  # NEW replaces the
#              study there (v1/, v2/, ..., README.md and FINDINGS.md's own text kept; the old
#              study's CSVs kept in reference/h200/v3, the whole of it in reference/h200.prev for the
#              compare), then the Findings (with v3 -> new), the audit and the compare old -> new;
#              README.md's table of sources is still yours to rewrite
# NJ cells at once, one GPU each (hydra/launcher=gpus); one GPU: the default launcher.
# LIMIT=SECONDS stops the stage by then (finished cells keep their rows). SNAP=FILE.tgz packs
# OUTDIR (no traces, no generated code) into FILE every minute and at the end, so a device
# command that runs past its own limit still returns what finished: set LIMIT at least 30 s
# under the command's limit, which the device tool cuts to the session's remaining time.
# Measured with v1's harness (a fresh process per cell, imports inside it): nvidia-h200-x2
# (NJ=4): part3 ~5 min; nvidia-h200 (NJ=2): part3 ~9 min, part1 ~1.7 min, part2 ~2.4 min,
# scaling ~16 min. The warm parent's figures are in benchmarks/README.md.
# To finish a cut stage in a later command, carry the SNAP archive's contents and resume from a
# copy: files left on a warm machine by the previous command are not to be trusted (one came
# back without its finished cells and without ceilings.json, and the resume redid them).
set -uo pipefail
stage=$1; out=$(realpath -m "$2"); mkdir -p "$out"
deadline=$((SECONDS + ${LIMIT:-86400}))
export PYTHONUNBUFFERED=1
C=$out/ceilings.json; CAL=calibration_file=$C  # the ceilings (and host_gauge.txt) of every cell
if [ "$stage" = assemble ] || [ "$stage" = land ]; then GPUS=0; else  # they only read CSVs
  GPUS=$(python3 -c "import torch; print(torch.cuda.device_count())"); fi
NJ=${NJ:-$((GPUS > 0 ? GPUS : 1))}
LAUNCH=(); [ "$NJ" -gt 1 ] && LAUNCH=(hydra/launcher=gpus hydra.launcher.n_jobs="$NJ")
snapshot() {
  tar czf "$SNAP.part" -C "$out" --exclude='*.json.gz' --exclude=generated \
    --exclude=.compile_cache --exclude='*.lock' . 2>/dev/null && mv -f "$SNAP.part" "$SNAP"
}
if [ -n "${SNAP:-}" ]; then
  ( trap exit TERM; while :; do sleep 60 & wait $!; snapshot; done ) >/dev/null 2>&1 &
  snapper=$!
  trap 'kill $snapper 2>/dev/null; snapshot' EXIT
fi
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
  t limited "$left" python3 -m study.run -m "${LAUNCH[@]}" "$CAL" \
    out_root="$out/$name" "$@" 2>&1 | tee -a "$out/$name.log" | grep -E '^\[study\]|Error|error:'
}
# Rows take their peak_* and pct_peak_* from OUTDIR/ceilings.json: every stage but parts (which
# calibrates first) calibrates when OUTDIR has none, e.g. a resume on a fresh machine (~15 s).
if [ "$stage" != parts ] && [ "$stage" != v2-parts ] && [ "$stage" != probe ] && [ "$GPUS" -gt 0 ] && [ ! -s "$C" ]; then
  echo "no $C: calibrating first (copy one in to keep an earlier calibration)"
  t python3 -m study.measure.calibrate dtypes=[bf16,fp16,fp32] "$CAL"
fi
full_speed() {  # survey the host; stop where its fast level is not full speed, or unknown
  local s='' lvl='' try
  # The H200 machines: 13.4-13.9 us on three of them, 16.5-22.2 on three others (2026-12-02),
  # where every host-bound cell read slower (docs/method.md, "Machines differ"). One machine
  # (2026-12-02, later) read 13.4, 24.0, 15.8, 13.1, 16.2, 16.2 us in surveys a minute apart: its
  # fast level comes and goes. Up to SURVEYS surveys (10 s each) until one reads full speed. A
  # gate, not a guarantee: blocks count as fast up to 1.3x the lowest level seen (17 us after a
  # 13.1 survey), so a 16 us stretch later passes as fast (docs/method.md).
  [[ ${SURVEYS:-4} =~ ^[1-9][0-9]*$ ]] || { echo "SURVEYS must be 1 or more, not ${SURVEYS}"; exit 2; }
  for ((try = 1; try <= ${SURVEYS:-4}; try++)); do
    s=$(python3 -m study.measure.host_gauge "$CAL" 2>&1); printf '%s\n' "$s" | tee -a "$out/phase.txt"
    lvl=$(grep -o 'fast level [0-9.]*' <<<"$s" | awk '{print $3}')
    [ -n "$lvl" ] && awk -v l="$lvl" -v f="${FULL_US:-14.5}" 'BEGIN { exit !(l <= f) }' && break
  done
  if [ "${FULL_US:-14.5}" != 99 ] && { [ -z "$lvl" ] ||
    awk -v l="$lvl" -v f="${FULL_US:-14.5}" 'BEGIN { exit !(l > f) }'; }; then
    echo "STOP: this machine's host gauge reads a fast level of ${lvl:-nothing (the survey" \
      "failed)} us, not full speed (FULL_US=${FULL_US:-14.5} us): host-bound cells would read" \
      "slow. Give the machine back and run again on another; FULL_US=99 runs anyway."
    exit 3
  fi
}
case $stage in
  parts)
    t python3 -m study.measure.calibrate dtypes=[bf16,fp16,fp32] "$CAL"
    # Pinning check: 4 tiny cells on the GPUs; a cell that saw every GPU fails loudly.
    # With one GPU every cell is on it anyway (each still checks its device's UUID).
    [ "$GPUS" -gt 1 ] && sweep pin variant=naive,flash compile=off,default +experiment=tiny
    if [ "$GPUS" -gt 1 ] && grep -rq "GPU pinning failed" "$out/pin"; then
      echo "GPU pinning failed (see $out/pin): run benchmarks/fork_probe.py"; exit 1
    fi
    sweep part3 +experiment=part3
    sweep part1 +experiment=part1
    sweep part2 +experiment=part2
    ;;
  scaling)
    sweep scaling +experiment=scaling
    ;;
  rest)  # what reference/h200 still lacks: part2, then scaling with twice the jobs (short holds)
    sweep part2 +experiment=part2
    sweep scaling +experiment=scaling
    ;;
  v2-parts)
    t python3 -m study.measure.calibrate dtypes=[bf16] "$CAL"
    sweep part3 +experiment=part3
    sweep part1 +experiment=part1
    sweep part2 +experiment=part2
    # Host-bound cells (latency above device time in the v1 and v2 rows) twice more, each in a
    # fresh process, into the same sweep dirs (resume=true keeps the finished repeat=0 cells).
    sweep part3 +experiment=part3 resume=true repeat=1,2 variant=flash,cudnn,sdpa \
      compile=off,default,max-autotune-no-cudagraphs
    sweep part1 +experiment=part1 resume=true repeat=1,2 shape.n=64
    sweep part2 +experiment=part2 resume=true repeat=1,2 variant=linear
    ;;
  v2-train)
    sweep block +experiment=block
    sweep block_bwd +experiment=block pass=fwd_bwd
    sweep part3_bwd +experiment=part3 pass=fwd_bwd
    sweep part2_train +experiment=part2 pass=train_step
    sweep dynamic +experiment=dynamic
    ;;
  v2-flex)
    sweep flex +experiment=flex
    sweep scaling +experiment=scaling
    ;;
  ncu)
    sweep ncu variant=flash,naive compile=off,default ncu.enabled=true
    ;;
  probe)
    t python3 benchmarks/fork_probe.py | tee "$out/fork_probe.txt"
    ;;
  v3)  # v3 OUTDIR NAME...: each experiment in turn, resumed where a sweep dir exists
    shift 2
    known=" part1 part2 part3 block block_bwd part3_bwd part2_train dynamic flex scaling targets targets_bwd models "
    [ $# -gt 0 ] || { echo "v3: name the experiments:$known"; exit 2; }
    for name in "$@"; do  # every name checked before anything runs
      [[ $known == *" $name "* ]] || { echo "v3: no experiment named $name; known:$known"; exit 2; }
    done
    full_speed
    first=1
    for name in "$@"; do
      # each later experiment's host, recorded (phase.txt, host_gauge.txt), not gated: ~12 s
      [ $first = 1 ] || [ $((deadline - SECONDS)) -le 60 ] ||
        python3 -m study.measure.host_gauge "$CAL" 2>&1 | grep 'fast level' | sed "s/^/before $name: /" >>"$out/phase.txt"
      first=0
      case $name in
        part1|part2|part3) sweep "$name" +experiment="$name" repeats=3 resume=true ;;
        block_bwd) sweep "$name" +experiment=block pass=fwd_bwd resume=true ;;
        part3_bwd) sweep "$name" +experiment=part3 pass=fwd_bwd resume=true ;;
        part2_train) sweep "$name" +experiment=part2 pass=train_step resume=true ;;
        targets) sweep "$name" +experiment=targets \
          compile=off,default,dynamo_eager,aot_eager,cudagraphs,cpp_wrapper resume=true ;;
        # a training step taken apart: where compiled cuDNN's extra host time per step goes
        # (Dynamo, AOTAutograd's two wrappers, Inductor's), against flash and the block
        targets_bwd) sweep "$name" +experiment=targets pass=fwd_bwd variant=flash,cudnn,block \
          compile=off,default,dynamo_eager,aot_eager resume=true ;;
        *) sweep "$name" +experiment="$name" resume=true ;;  # block dynamic flex scaling models
      esac
    done
    ;;
  v3-preflight)  # before v3's freeze: timing.one_core (every thread on one core while timed)
    t python3 -m study.measure.host_gauge "$CAL" | tee -a "$out/phase.txt"
    for args in "--backend flash" "--backend flash --one-core" "--backend cudnn --one-core" \
      "--backend flash --one-core --compile max-autotune-no-cudagraphs"; do
      t python3 benchmarks/pair_probe.py $args 2>&1 | grep -v Warning | tee -a "$out/pair_probe.txt"
    done
    sweep pre_one +experiment=part3 variant=flash,cudnn \
      compile=off,default,max-autotune-no-cudagraphs,reduce-overhead pass=fwd_bwd repeats=2
    sweep pre_fwd +experiment=part3 variant=flash,cudnn compile=off,default pass=fwd
    sweep pre_linear +experiment=part2 variant=linear compile=off,default pass=fwd
    sweep pre_spread +experiment=part3 variant=flash,cudnn \
      compile=off,default,max-autotune-no-cudagraphs,reduce-overhead pass=fwd_bwd timing.one_core=false
    ;;
  v3-check)  # training pair blocks as long as a per-call chunk: paired within 3% of per call?
    full_speed
    sweep check +experiment=part3 variant=flash,cudnn \
      compile=off,default,max-autotune-no-cudagraphs,reduce-overhead pass=fwd_bwd repeats=2
    ;;
  assemble)  # assemble OUTDIR NEW (here, after the last command): NEW.src/NAME per experiment
    # (copies: analysis.load labels a dir by its resolved name, so a link would read as the
    # sweep's timestamp), the audit, then one report of them all into NEW
    [ $# -ge 3 ] || { echo "usage: assemble OUTDIR NEW"; exit 2; }
    new=$(realpath -m "$3"); src="$new.src"
    shopt -s nullglob; sweeps=("$out"/*/sweeps)
    [ ${#sweeps[@]} -gt 0 ] || { echo "assemble: no OUTDIR/NAME/sweeps under $out"; exit 2; }
    rm -rf "$src"; mkdir -p "$src"
    for d in "${sweeps[@]}"; do
      name=$(basename "$(dirname "$d")"); n=$(find "$d" -mindepth 1 -maxdepth 1 -type d | wc -l)
      [ "$n" -eq 1 ] || { echo "assemble: $d holds $n sweeps, not one: keep the one to report"; exit 2; }
      cp -r "$d"/*/ "$src/$name"
    done
    python3 -m reference.findings.audit "$src"/*; echo "audit exit $?"
    python3 -m analysis.report "$src"/* --out "$new"
    ;;
  land)  # land NEW RESULTS [KEEP] (NEW: assemble's report dir; RESULTS: reference/h200; KEEP: vN,
    # a name to keep the old study's CSVs under, RESULTS/vN, beside v1/ and v2/)
    [ $# -ge 3 ] && [ -f "$out/runs.csv" ] && [ -d "$3" ] || {
      echo "usage: land NEW RESULTS [vN] (NEW from assemble, with its runs.csv; RESULTS a results"
      echo "dir; vN keeps the old study's CSVs in RESULTS/vN)"
      exit 2; }
    res=$(realpath "$3"); prev="$res.prev"; keep=${4:-}
    case "$out/" in "$res"/*) echo "land: NEW ($out) is RESULTS or inside it"; exit 2;; esac
    [ -e "$prev" ] && { echo "land: $prev exists: compare or remove it first"; exit 2; }
    if [ -n "$keep" ]; then
      [[ "$keep" =~ ^v[0-9]+$ ]] || { echo "land: KEEP is a version name (v3), not '$keep'"; exit 2; }
      [ -e "$res/$keep" ] && { echo "land: $res/$keep exists: the old study is kept already?"; exit 2; }
    fi
    for d in "$res"/*/; do  # a sweep the old study had and NEW lacks goes with the old study
      n=$(basename "$d"); [[ "$n" =~ ^v[0-9]+$ ]] || [ -e "$out/$n" ] || echo "land: dropping $n (not in NEW)"
    done
    cp -r "$res" "$prev" || { echo "land: could not keep the old study in $prev"; exit 1; }
    # kept: the earlier studies' CSVs (v1/, v2/, ...), README.md and FINDINGS.md's own text
    find "$res" -mindepth 1 -maxdepth 1 ! -name 'v[0-9]*' ! -name README.md ! -name FINDINGS.md \
      -exec rm -rf {} +
    cp -r "$out"/. "$res"/ || { echo "land: copy failed; the old study is in $prev"; exit 1; }
    if [ -n "$keep" ]; then
      mkdir -p "$res/$keep" && cp "$prev"/*.csv "$res/$keep"/ \
        || { echo "land: could not keep the old CSVs in $res/$keep"; exit 1; }
    fi
    rm -f "$res/report.html"
    python3 -m analysis.report "$3" --out "$3" >/dev/null && rm -f "$res/report.html"  # its
    # sources named as reference/h200, not as the assembled copies on this machine
    python3 -m reference.findings "$res" --write
    python3 -m reference.findings.audit "$res"; echo "audit exit $?"
    python3 -m analysis.compare "$prev" "$res" --out "$res.compare"
    echo "landed $out in $res (the old study: $prev${keep:+, its CSVs in $res/$keep}; compare:"
    echo "$res.compare). Rewrite $res/README.md's table of sources, then remove $prev and"
    echo "$res.compare."
    ;;
  resume)  # resume OUTDIR NAME [OVERRIDES...]
    full_speed
    name=$3; shift 3
    sweep "$name" +experiment="${EXP:-$name}" resume=true "$@"  # EXP=part3 for NAME=part3_bwd
    ;;
esac
