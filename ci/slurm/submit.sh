#!/usr/bin/env bash
# A suite as a Slurm job array of N shards plus a merge job that waits for them:
#   ci/slurm/submit.sh N REPORTS_DIR RUN_ARGS...
#   e.g. ci/slurm/submit.sh 4 reports/nightly --cases cases/nightly.toml
# Each array task runs `mqacheck run --shard auto RUN_ARGS` (the task's shard from
# SLURM_ARRAY_TASK_ID) into REPORTS_DIR/shards/<array job id>/shard-<task>; the merge job (afterok:
# every task wrote its report) merges that submission's folder alone into REPORTS_DIR/merged, and
# its exit status is the verdict. A folder per submission: shards left by an earlier submission to
# the same REPORTS_DIR (with another N, or of another suite) are never merged with this one's.
# Slurm's logs go to REPORTS_DIR/logs/shard-<array job id>-<task>.log and merge-<array job id>.log. MQACHECK names the binary (default: mqacheck on PATH); SBATCH_ARGS adds
# options to both submissions (e.g. "--partition=gpu --gres=gpu:1"). Prints the two job ids.
set -euo pipefail
if (($# < 3)); then
  echo "usage: $0 SHARDS REPORTS_DIR RUN_ARGS... (e.g. $0 4 reports/nightly --cases cases/nightly.toml)" >&2
  exit 2
fi
shards=$1 reports=$2
shift 2
if ! [[ $shards =~ ^[1-9][0-9]*$ ]]; then
  echo "$0: SHARDS '$shards': expected a whole number of shards, at least 1" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mqacheck=$(command -v "${MQACHECK:-mqacheck}") || { echo "$0: MQACHECK '${MQACHECK:-mqacheck}': no such program" >&2; exit 2; }
mqacheck=$(realpath "$mqacheck")
mkdir -p "$reports/shards" "$reports/logs"
reports=$(realpath "$reports")
read -r -a extra <<<"${SBATCH_ARGS:-}"
array=$(sbatch --parsable "${extra[@]}" --array="0-$((shards - 1))" --output="$reports/logs/shard-%A-%a.log" \
  "$here/shard.sbatch" "$mqacheck" "$reports" "$@")
array=${array%%;*}
merge=$(sbatch --parsable "${extra[@]}" --dependency="afterok:$array" --kill-on-invalid-dep=yes \
  --output="$reports/logs/merge-$array.log" "$here/merge.sbatch" "$mqacheck" "$reports" "$array")
merge=${merge%%;*}
echo "array job $array ($shards shards), merge job $merge: reports in $reports/merged, shards in $reports/shards/$array"
