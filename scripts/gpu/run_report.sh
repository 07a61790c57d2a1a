# shellcheck shell=bash disable=SC2154 # sourced by run.sh, which sets work, out, quick and the rest
# scripts/gpu/run_report.sh: the reports of scripts/gpu/run.sh (sourced by it). Facts of the
# set-up and one record per part accumulate in $work; publish rewrites $OUT from them after
# every part, so whatever the run reaches is there even if it is stopped: report.md,
# report.json, run.log and results.tar.gz (4 files, far inside the device tool's limits).
# Plain bash, sed, grep and awk (mawk): the machine's python may not be there at all.

# Both tables are tab-separated with "-" for an empty field: read's IFS would merge two tabs.
field() { local v=${1//$'\t'/ }; printf '%s' "${v:--}"; }
unfield() { [[ $1 == - ]] || printf '%s' "$1"; }

# ---- set-up facts: key TAB value ----

fact() { printf '%s\t%s\n' "$1" "$(field "$2")" >>"$work/facts.tsv"; }

# ---- JSON ----

json_str() {
    local s
    s=$(printf '%s' "$1" | tr -d '\000-\010\013\014\016-\037')
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\t'/\\t}
    s=${s//$'\r'/}
    s=${s//$'\n'/\\n}
    printf '"%s"' "$s"
}

# a number for JSON, or null
json_num() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] && printf '%s' "$1" || printf null; }

median_of() { printf '%s\n' "$@" | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {
    if (NR) printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ---- what each kind of part contributes: a one-line summary, figures, an excerpt ----

# kiln train's metrics.jsonl: the median tokens/s of the steps after the warm-up ones,
# the last step's loss and the final validation loss
train_values_kiln() {
    local m=$1/metrics.jsonl last
    [[ -s $m ]] || return 0
    tps=$(median_of $(tail -n +$((warmup_steps + 1)) "$m" | grep -o '"tokens_per_s": [-0-9.e+]*' | sed 's/.*: //'))
    last=$(tail -1 "$m")
    step=$(echo "$last" | grep -o '"step": [0-9]*' | sed 's/.*: //')
    loss=$(echo "$last" | grep -o '"loss": [-0-9.e+]*' | sed 's/.*: //')
    val=$(echo "$last" | grep -o '"val_loss": [-0-9.e+]*' | sed 's/.*: //')
}

train_values_torch() {
    tps=$(sed -n 's/^tokens_per_s //p' "$1" | tail -1)
    step=$(sed -n 's|^step \([0-9]*\)/.*|\1|p' "$1" | tail -1)
    loss=$(sed -n 's|^step [0-9]*/[0-9]*  *loss \([-0-9.e+]*\).*|\1|p' "$1" | tail -1)
    val=$(sed -n 's/^val loss //p' "$1" | tail -1)
}

# summarize ID LOG: sets summary (one line), writes values/ID.json and md/ID.md (the excerpt)
summarize() {
    local id=$1 log=$2 excerpt=""
    local tps="" step="" loss="" val=""
    summary=""
    case $id in
    0-setup)
        excerpt=$(cat "$work/logs/0-info.log") ;;
    1-verify-*)
        summary=$(grep '^kiln verify: .* runs, ' "$log" | tail -1 | sed 's/^kiln verify: //')
        excerpt=$(grep -E '^kiln verify: .* runs, |^FAIL ' "$log" | head -40) ;;
    1-tests-*)
        summary=$(tail -1 "$log" | sed 's/^== //')
        excerpt=$(grep -E '^== |%: Checks' "$log") ;;
    2-bench-* | 4-decode-*)
        summary=$(grep -c 'GFLOP/s\|GB/s\|tokens/s\|MiB ' "$log") summary="$summary rows"
        excerpt=$(grep -v -E '^\$ |^kiln bench( decode)?: (running|wrote|[a-z]+:[0-9]+: )' "$log") ;;
    2-torch-matmul)
        summary=$(grep -c 'kiln/torch' "$log") summary="$summary GEMM shapes"
        excerpt=$(grep -v '^\$ ' "$log")
        [[ -s $work/results/torch_matmul.json ]] && cp "$work/results/torch_matmul.json" "$work/values/$id.json" ;;
    4-precision-*)
        summary=$(awk '$1 == "total" {m = $NF} $1 == "tokens/s" {t = $NF}
            END {if (m != "" || t != "") printf "fp16/fp32: memory %s, tokens/s %s", m, t}' "$log")
        excerpt=$(grep -v -E '^\$ |^kiln bench precision: running' "$log") ;;
    3-train-torch)
        train_values_torch "$log" ;;
    3-train-*)
        train_values_kiln "$work/results/train-${id#3-train-}" ;;
    esac
    if [[ $id == 3-train-* && -n $tps ]]; then
        summary="$tps tokens/s; step $step loss $loss${val:+; val loss $val}"
        printf '{"tokens_per_s": %s, "step": %s, "loss": %s, "val_loss": %s}\n' "$(json_num "$tps")" \
            "$(json_num "$step")" "$(json_num "$loss")" "$(json_num "$val")" >"$work/values/$id.json"
        printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$tps" "$step" "$loss" "$val" >>"$work/train.tsv"
    fi
    if [[ -n $excerpt ]]; then
        printf '### %s\n\n```\n%s\n```\n\n' "$id" "$excerpt" >"$work/md/$id.md"
    fi
}

# ---- records ----

# record ID TITLE STATUS SECONDS REASON: one part's result, published at once
record() {
    local id=$1 title=$2 status=$3 secs=$4 reason=$5 summary=""
    mkdir -p "$work/values" "$work/md"
    [[ -f $work/logs/$id.log || $id == 0-setup ]] && summarize "$id" "$work/logs/$id.log"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$title" "$status" "$secs" "$(field "$reason")" "$(field "$summary")" >>"$work/parts.tsv"
    say "$id: $status${reason:+: $reason}${summary:+ ($summary)}"
    publish
}

summary_counts() {
    awk -F'\t' '{n[$3]++} END {printf "%d passed, %d failed, %d skipped", n["passed"], n["failed"], n["skipped"]}' "$work/parts.tsv"
}

# ---- the reports ----

report_json() {
    local first=1 id title status secs reason summary key value
    printf '{\n "schema": "kiln-gpu-run/1",\n "setup": {'
    while IFS=$'\t' read -r key value; do
        ((first)) || printf ','
        first=0
        printf '\n  %s: %s' "$(json_str "$key")" "$(json_str "$(unfield "$value")")"
    done <"$work/facts.tsv"
    printf '\n },\n "parts": ['
    first=1
    while IFS=$'\t' read -r id title status secs reason summary; do
        ((first)) || printf ','
        first=0
        printf '\n  {"id": %s, "title": %s, "status": %s, "seconds": %s, "reason": %s, "summary": %s, "values": %s}' \
            "$(json_str "$id")" "$(json_str "$title")" "$(json_str "$status")" "$(json_num "$secs")" \
            "$(json_str "$(unfield "$reason")")" "$(json_str "$(unfield "$summary")")" "$(cat "$work/values/$id.json" 2>/dev/null || echo null)"
    done <"$work/parts.tsv"
    printf '\n ],\n "counts": %s\n}\n' "$(json_str "$(summary_counts)")"
}

# step 3's runs side by side, each against PyTorch's tokens/s
train_table() {
    [[ -s $work/train.tsv ]] || return 0
    local torch_tps
    torch_tps=$(awk -F'\t' '$1 == "3-train-torch" {print $2}' "$work/train.tsv")
    echo "| run | tokens/s | vs PyTorch CUDA | last step | loss | val loss |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: |"
    awk -F'\t' -v t="$torch_tps" '{
        r = (t > 0 && $2 > 0) ? sprintf("%.2f", $2 / t) : "-"
        printf "| %s | %s | %s | %s | %s | %s |\n", substr($1, 9), $2, r, $3, $4, ($5 == "" ? "-" : $5) }' "$work/train.tsv"
    echo
}

report_md() {
    echo "# kiln on a GPU: scripts/gpu/run.sh"
    echo
    echo "$(summary_counts), $SECONDS s so far. docs/gpu.md says how to read this."
    echo
    echo "| set-up | |"
    echo "| --- | --- |"
    awk -F'\t' '{gsub(/\|/, "/", $2); printf "| %s | %s |\n", $1, $2}' "$work/facts.tsv"
    echo
    echo "| part | what | result | s | why / summary |"
    echo "| --- | --- | --- | ---: | --- |"
    awk -F'\t' '{r = $5 != "-" ? $5 : $6; if (r == "-") r = ""; gsub(/\|/, "/", r); printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, r}' "$work/parts.tsv"
    echo
    train_table
    local id
    cut -f1 "$work/parts.tsv" | while read -r id; do
        if [[ -f $work/md/$id.md ]]; then cat "$work/md/$id.md"; fi
    done
}

# the logs in the order of the parts, each under its command
run_log() {
    local id
    cat "$work/logs/0-machine.log" "$work/logs/0-info.log" 2>/dev/null
    cut -f1 "$work/parts.tsv" | while read -r id; do
        if [[ -f $work/logs/$id.log ]]; then printf '\n==== %s\n' "$id"; cat "$work/logs/$id.log"; fi
    done
}

publish() {
    report_md >"$out/.report.md" && mv "$out/.report.md" "$out/report.md"
    report_json >"$out/.report.json" && mv "$out/.report.json" "$out/report.json"
    run_log >"$out/.run.log" && mv "$out/.run.log" "$out/run.log"
    # kiln's JSON results and the training metrics; never the checkpoints
    (cd "$work/results" && find . \( -name '*.json' -o -name metrics.jsonl \) -print0 |
        tar --null -T - -czf "$out/.results.tar.gz") && mv "$out/.results.tar.gz" "$out/results.tar.gz"
}
