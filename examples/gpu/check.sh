#!/bin/bash
# GPU-ready check: the whole omnivchat loop on a real omni model served by vLLM on this machine's GPU.
#
#   examples/gpu/check.sh                                   # Qwen/Qwen2.5-Omni-3B, results under runs/gpu-check
#   examples/gpu/check.sh --model Qwen/Qwen2.5-Omni-7B --out runs/gpu-check-7b
#   examples/gpu/check.sh --dailyomni data/Daily-Omni        # a Daily-Omni copy already laid out (qa.json, Videos/)
#   examples/gpu/check.sh --judges judges.toml               # judge with your panel instead of the served model
#
# Steps: start `vllm serve` and wait until it lists its model; `omnivchat check-route` (does the audio arrive?
# in-video first, then separate); `eval` and the rule-judge score on the mini-bench (examples/bench); `ablate` on
# the mini-bench (the four-condition grid, offline rule judge); `eval` and `score` on a Daily-Omni sample (fetched
# with `omnivchat data get dailyomni` unless --dailyomni is given); an LLM `judge` of the mini-bench run (the
# served model judges itself, or your --judges file) and its `score`; the served model and the rule judge against
# the people of examples/labels (`judges agree --human`, on the run those labels were made on). Then one screen: each step's status, wall
# time and headline figures, and the log of every step that failed. Exit status 0 only if every step passed.
#
# It stops what it started (the server's whole process group, and the step running) on exit, Ctrl-C and
# SIGTERM, and nothing else: it refuses to start if something already answers on the port. Runs resume: run it
# again with the same --out and completed replies are reused. Budget: meant to fit in 10 minutes on one H200 once
# the weights are cached (an estimate, not yet measured on a GPU: the vLLM start, then 8 + 32 mini-bench requests,
# DAILYOMNI_LIMIT=20 Daily-Omni clips and 8 + 8 verdicts at CONCURRENCY=8, MAX_TOKENS=512). Every setting below is a
# flag or an environment variable.
set -uo pipefail

usage() {
    sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
    cat <<'EOF'
Flags (environment variable in brackets):
  --model ID            model to serve and test [MODEL] (default Qwen/Qwen2.5-Omni-3B)
  --out DIR             where runs and logs go [OUT] (default runs/gpu-check)
  --port N              the server's port on 127.0.0.1 [PORT] (default 8011)
  --dailyomni DIR       a laid-out Daily-Omni copy: DIR/qa.json and DIR/Videos [DAILYOMNI]
  --dailyomni-limit N   Daily-Omni questions to run [DAILYOMNI_LIMIT] (default 20)
  --judges FILE         judges file for the judge step [JUDGES] (default: the served model)
  --bench DIR           the mini-bench [BENCH] (default examples/bench)
  --health-timeout S    seconds to wait for the server [HEALTH_TIMEOUT] (default 900)
Also: CONCURRENCY (8), MAX_TOKENS (512), MAX_MODEL_LEN (32768), LIMIT_MM, TRUST_MM_KWARGS (set it empty for
vLLM 0.18-0.30), AUDIO_DELIVERY (auto, in-video, separate), EXTRA_VLLM_ARGS, VLLM, OMNIVCHAT, PYTHON.
EOF
}

HERE=$(cd "$(dirname "$0")" && pwd)
MODEL=${MODEL:-Qwen/Qwen2.5-Omni-3B}
OUT=${OUT:-runs/gpu-check}
PORT=${PORT:-8011}
DAILYOMNI=${DAILYOMNI:-}
DAILYOMNI_LIMIT=${DAILYOMNI_LIMIT:-20}
JUDGES=${JUDGES:-}
BENCH=${BENCH:-$HERE/../bench}
HEALTH_TIMEOUT=${HEALTH_TIMEOUT:-900}
CONCURRENCY=${CONCURRENCY:-8}
MAX_TOKENS=${MAX_TOKENS:-512}
MAX_MODEL_LEN=${MAX_MODEL_LEN:-32768}
# vLLM's --limit-mm-per-prompt; empty: derived from the mini-bench (below), whose multi-turn items send the most.
LIMIT_MM=${LIMIT_MM:-}
TRUST_MM_KWARGS=${TRUST_MM_KWARGS---trust-request-mm-kwargs}
AUDIO_DELIVERY=${AUDIO_DELIVERY:-auto}
VLLM=${VLLM:-vllm}
OMNIVCHAT=${OMNIVCHAT:-omnivchat}
PYTHON=${PYTHON:-python3}
read -r -a EXTRA_VLLM_ARGS <<< "${EXTRA_VLLM_ARGS:-}"

while (( $# )); do
    case $1 in
        --model) MODEL=$2; shift ;;
        --out) OUT=$2; shift ;;
        --port) PORT=$2; shift ;;
        --dailyomni) DAILYOMNI=$2; shift ;;
        --dailyomni-limit) DAILYOMNI_LIMIT=$2; shift ;;
        --judges) JUDGES=$2; shift ;;
        --bench) BENCH=$2; shift ;;
        --health-timeout) HEALTH_TIMEOUT=$2; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

LOGS=$OUT/logs
URL=http://127.0.0.1:$PORT/v1
mkdir -p "$LOGS"

# --- what this script started, and how it is stopped ---------------------------------------------------------
SERVER_PID=
STEP_PID=
stop_all() {
    if [[ -n $STEP_PID ]]; then
        kill -TERM "$STEP_PID" 2>/dev/null
        wait "$STEP_PID" 2>/dev/null
    fi
    if [[ -n $SERVER_PID ]]; then
        # vLLM runs its engine in child processes: stop the server's whole process group (its own, from setsid).
        kill -TERM -- "-$SERVER_PID" 2>/dev/null
        for _ in $(seq 1 60); do
            kill -0 -- "-$SERVER_PID" 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL -- "-$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
        echo "stopped the server (process group $SERVER_PID)"
        SERVER_PID=
    fi
}
trap stop_all EXIT
trap 'echo "interrupted: stopping what this check started" >&2; exit 130' INT
trap 'echo "terminated: stopping what this check started" >&2; exit 143' TERM

now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# --- steps: each runs in the background (so Ctrl-C is handled at once), logged, timed ---------------------------
NAMES=()
declare -A STATUS TIME LOG
run_step() {  # NAME COMMAND... : run one command of a step into the step's log
    local name=$1; shift
    "$@" >> "$LOGS/$name.log" 2>&1 < /dev/null &
    STEP_PID=$!
    wait "$STEP_PID"
    local rc=$?
    STEP_PID=
    return "$rc"
}
begin() {  # NAME: a step starts
    NAMES+=("$1"); LOG[$1]=$LOGS/$1.log; : > "${LOG[$1]}"
    STEP_START=$(now)
    echo "[$1] started (log ${LOG[$1]})"
}
finish() {  # NAME RC: a step ends
    TIME[$1]=$(elapsed "$STEP_START" "$(now)")
    if (( $2 == 0 )); then STATUS[$1]=ok; else STATUS[$1]="FAILED (exit $2)"; fi
    echo "[$1] ${STATUS[$1]} in ${TIME[$1]} s"
}
skip() {  # NAME WHY
    NAMES+=("$1"); STATUS[$1]="not run: $2"; TIME[$1]=-; LOG[$1]=-
    echo "[$1] not run: $2"
}
json() {  # FILE EXPR: a figure from a JSON file the step wrote ('-' when absent)
    "$PYTHON" - "$1" "$2" <<'EOF' 2>/dev/null || echo "-"
import json, sys
d = json.load(open(sys.argv[1]))
# globals, not locals: a generator in the expression sees them
v = eval(sys.argv[2], {"d": d, "f": lambda x: "-" if x is None else f"{x:+.3f}", "p": lambda x: "-" if x is None else f"{x:.3f}"})
print(v)
EOF
}

# --- 1. the server ------------------------------------------------------------------------------------------
if curl -sf -o /dev/null "$URL/models"; then
    echo "error: something already answers on port $PORT; this check starts its own server (use --port)" >&2
    exit 2
fi
begin serve
# vLLM refuses a request holding more media items of a modality than --limit-mm-per-prompt allows: the dry run
# counts the mini-bench's largest request as vLLM does (the separate delivery, which adds the most: one WAV part per
# clip), sending nothing. A Daily-Omni item sends one clip.
if [[ -z $LIMIT_MM ]]; then
    counted=(--audio-delivery separate)
    [[ $AUDIO_DELIVERY != auto ]] && counted=(--audio-delivery "$AUDIO_DELIVERY")
    LIMIT_MM=$("$OMNIVCHAT" eval --bench "$BENCH" --model "$MODEL" --base-url "$URL" --no-key "${counted[@]}" \
        --dry-run --output "$LOGS/limit-dry-run" 2> "$LOGS/limit-dry-run.log" \
        | sed -n "s/.*--limit-mm-per-prompt '\([^']*\)'.*/\1/p")
    # the bench's own step then fails and says why; the server starts with vLLM's default limits
    [[ -z $LIMIT_MM ]] && echo "warning: could not derive --limit-mm-per-prompt from $BENCH (see" \
        "$LOGS/limit-dry-run.log): vLLM's default limits apply" >&2
fi
args=(serve "$MODEL" --host 127.0.0.1 --port "$PORT" --served-model-name "$MODEL" --dtype bfloat16
      --max-model-len "$MAX_MODEL_LEN")
[[ -n $LIMIT_MM ]] && args+=(--limit-mm-per-prompt "$LIMIT_MM")
[[ -n $TRUST_MM_KWARGS ]] && args+=("$TRUST_MM_KWARGS")
setsid "$VLLM" "${args[@]}" "${EXTRA_VLLM_ARGS[@]}" > "${LOG[serve]}" 2>&1 < /dev/null &
SERVER_PID=$!
echo "[serve] $VLLM ${args[*]} ${EXTRA_VLLM_ARGS[*]} (pid $SERVER_PID)"
deadline=$((SECONDS + HEALTH_TIMEOUT))
until curl -sf -o /dev/null "$URL/models"; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        wait "$SERVER_PID"; rc=$?
        SERVER_PID=
        echo "error: the server exited (status $rc) before it served; the end of ${LOG[serve]}:" >&2
        tail -n 30 "${LOG[serve]}" >&2
        exit 1
    fi
    if (( SECONDS > deadline )); then
        echo "error: the server did not serve within $HEALTH_TIMEOUT s; the end of ${LOG[serve]}:" >&2
        tail -n 30 "${LOG[serve]}" >&2
        exit 1
    fi
    sleep 1 & STEP_PID=$!; wait "$STEP_PID"; STEP_PID=
done
finish serve 0

ROUTE=(--model "$MODEL" --base-url "$URL" --no-key)

# --- 2. check-route: does the clip's audio reach the model? ---------------------------------------------------
begin check-route
delivery=()
rc=1
if [[ $AUDIO_DELIVERY == auto ]]; then
    for choice in in-video separate; do
        if run_step check-route "$OMNIVCHAT" check-route "${ROUTE[@]}" --bench "$BENCH" --audio-delivery "$choice" \
                -o "$OUT/route-check-$choice.json" --force; then
            AUDIO_DELIVERY=$choice; rc=0; break
        fi
    done
else
    run_step check-route "$OMNIVCHAT" check-route "${ROUTE[@]}" --bench "$BENCH" --audio-delivery "$AUDIO_DELIVERY" \
        -o "$OUT/route-check-$AUDIO_DELIVERY.json" --force
    rc=$?
fi
finish check-route $rc
# Without a passing check the runs below still go (in-video), but the summary says the audio was not shown to arrive.
[[ $AUDIO_DELIVERY == auto ]] && AUDIO_DELIVERY=in-video
delivery=(--audio-delivery "$AUDIO_DELIVERY")
RUN_OPTS=("${ROUTE[@]}" "${delivery[@]}" --concurrency "$CONCURRENCY" --max-tokens "$MAX_TOKENS" --no-progress)

# --- 3. eval on the mini-bench, scored by the offline rule judge --------------------------------------------------
begin eval
run_step eval "$OMNIVCHAT" eval --bench "$BENCH" "${RUN_OPTS[@]}" -o "$OUT/minibench" &&
    run_step eval "$OMNIVCHAT" score "$OUT/minibench" --panel rule -o "$OUT/minibench-rule.json" --force \
        --allow-incomplete  # the rule judge cannot decide every subcategory: no Mean over the bench, said so
finish eval $?

# --- 4. ablate: the four-condition grid on the mini-bench (offline rule judge) -----------------------------------
begin ablate
run_step ablate "$OMNIVCHAT" ablate --bench "$BENCH" "${RUN_OPTS[@]}" -o "$OUT/ablate"
finish ablate $?

# --- 5. Daily-Omni: a sample of the public benchmark ----------------------------------------------------------
if [[ -z $DAILYOMNI ]]; then
    DAILYOMNI=$OUT/dailyomni-data
    begin dailyomni-data
    run_step dailyomni-data "$OMNIVCHAT" data get dailyomni -o "$DAILYOMNI"
    finish dailyomni-data $?
fi
if [[ -f $DAILYOMNI/qa.json ]]; then
    begin dailyomni
    run_step dailyomni "$OMNIVCHAT" eval --benchmark dailyomni --data "$DAILYOMNI/qa.json" --limit "$DAILYOMNI_LIMIT" \
        "${RUN_OPTS[@]}" -o "$OUT/dailyomni" &&
        run_step dailyomni "$OMNIVCHAT" score "$OUT/dailyomni" -o "$OUT/dailyomni-score.json" --force
    finish dailyomni $?
else
    skip dailyomni "no $DAILYOMNI/qa.json"
fi

# --- 6. an LLM judge of the mini-bench run ----------------------------------------------------------------------
SELF_JUDGES=$OUT/judges.toml
printf '# the served model judges its own replies\n[judges.self]\nmodel = "%s"\nbase_url = "%s"\n\n[panels]\ndefault = ["self"]\n' \
    "$MODEL" "$URL" > "$SELF_JUDGES"
if [[ ! -f $OUT/minibench/manifest.json ]]; then
    skip judge "the mini-bench run does not exist"
else
    begin judge
    judge_key=()  # a judges file of yours keeps its keys; the served model needs none
    if [[ -z $JUDGES ]]; then
        judge_key=(--no-key)
        JUDGES=$SELF_JUDGES
    fi
    run_step judge "$OMNIVCHAT" judge "$OUT/minibench" --judges "$JUDGES" "${judge_key[@]}" --no-progress &&
        run_step judge "$OMNIVCHAT" score "$OUT/minibench" --judges "$JUDGES" -o "$OUT/minibench-judged.json" --force
    finish judge $?
fi

# --- 7. the served model as a judge against people: the labelled run of the example bench ----------------------
LABELS=$HERE/../labels/example-bench.csv
if [[ ! -f $LABELS ]] || [[ $(cd "$BENCH" 2>/dev/null && pwd) != $(cd "$HERE/../bench" && pwd) ]]; then
    skip people "the labels (examples/labels) are of examples/bench only"
else
    begin people  # the run the labels were made on (their header), graded by the served model and the rule judge
    run_step people "$OMNIVCHAT" eval --bench "$BENCH" --model 'sim:custom?video=0.5&audio=0.6&seed=1' \
        -o "$OUT/labelled" --no-progress &&
        run_step people "$OMNIVCHAT" judge "$OUT/labelled" --judges "$SELF_JUDGES" --no-key --no-progress &&
        run_step people "$OMNIVCHAT" judges agree "$OUT/labelled" --judges self,rule --human "$LABELS" \
            -o "$OUT/labelled-agreement.json" --force
    finish people $?
fi

# --- the screen of results -----------------------------------------------------------------------------------
figures() {  # NAME: the headline figures of a step that passed
    case $1 in
        serve) echo "$MODEL on $URL" ;;
        check-route) echo "audio arrives ($AUDIO_DELIVERY)" ;;
        eval)
            echo "$(grep -o '[0-9]* done ([0-9]* reused), [0-9]* failed' "${LOG[eval]}" | tail -n 1);" \
                "rule judge: $(json "$OUT/minibench-rule.json" '"Mean " + p(d["Mean"]) if d["Mean"] is not None else "Mean over " + str(d["n_subcategories"] - len(d["unscored_subcategories"])) + " of " + str(d["n_subcategories"]) + " subcategories " + p(d["partial_mean"])')," \
                "$(json "$OUT/minibench-rule.json" 'str(d["n_scored"]) + " scored, " + str(d["n_unscored"]) + " unscored"')" ;;
        ablate)
            echo "fusion gain $(json "$OUT/ablate/ablation.json" 'f(d["diagnosis"]["fusion_gain"])')," \
                "video reliance $(json "$OUT/ablate/ablation.json" 'f(d["diagnosis"]["video_reliance"])')," \
                "audio reliance $(json "$OUT/ablate/ablation.json" 'f(d["diagnosis"]["audio_reliance"])')," \
                "verdict $(json "$OUT/ablate/ablation.json" 'd["diagnosis"]["verdict"]')" ;;
        dailyomni-data) echo "$DAILYOMNI" ;;
        dailyomni)
            echo "$(grep -o '[0-9]* done ([0-9]* reused), [0-9]* failed' "${LOG[dailyomni]}" | tail -n 1);" \
                "accuracy $(json "$OUT/dailyomni-score.json" 'p(d["metrics"]["overall"]["accuracy"])')" \
                "($(json "$OUT/dailyomni-score.json" 'str(d["metrics"]["overall"]["correct"]) + " of " + str(d["metrics"]["overall"]["n"])'))" ;;
        judge)
            echo "Mean $(json "$OUT/minibench-judged.json" 'p(d["Mean"])')," \
                "$(json "$OUT/minibench-judged.json" 'str(d["n_scored"]) + " scored, " + str(d["n_unscored"]) + " unscored"')," \
                "panel $(json "$OUT/minibench-judged.json" '",".join(d["panel"])')" ;;
        people)
            echo "against people (examples/labels): $(json "$OUT/labelled-agreement.json" '"; ".join(r["judge"] + " accuracy " + p(r["accuracy"]["rate"]) + ", kappa " + p(r["kappa"]) + " (n " + str(r["n_decisions"]) + ")" for r in d["human"]["rows"] if r["tier"] == "all")')" ;;
    esac
}
failed=0
echo
echo "GPU-ready check: $MODEL (results in $OUT)"
printf '%-15s %-20s %8s  %s\n' step status "time (s)" "figures"
for name in "${NAMES[@]}"; do
    if [[ ${STATUS[$name]} == ok ]]; then
        printf '%-15s %-20s %8s  %s\n' "$name" ok "${TIME[$name]}" "$(figures "$name")"
    else
        failed=1
        detail="see ${LOG[$name]}"
        [[ ${LOG[$name]} == - ]] && detail=""
        printf '%-15s %-20s %8s  %s\n' "$name" "${STATUS[$name]}" "${TIME[$name]}" "$detail"
    fi
done
if (( failed )); then
    echo "NOT READY: a step failed (its log is named above); no figure is shown for it"
    exit 1
fi
echo "READY: every step passed"
