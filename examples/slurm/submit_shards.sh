#!/bin/bash
# Submit a sharded run: the array job eval_shards.sbatch (one shard per task, SHARDS of them), then
# merge_shards.sbatch, which starts once every task has ended well (--dependency=afterok). Settings go through the
# environment to both jobs (MODEL, BENCH, OUT, and those of eval_replicas.sbatch).
#
#   SHARDS=4 MODEL=Qwen/Qwen2.5-Omni-7B AUDIO_DELIVERY=in-video examples/slurm/submit_shards.sh
set -euo pipefail

SHARDS=${SHARDS:-4}
SBATCH=${SBATCH:-sbatch}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SHARDS SCRIPTS=${SCRIPTS:-$HERE}

array=$("$SBATCH" --parsable --array=1-"$SHARDS" --export=ALL "$HERE/eval_shards.sbatch")
array=${array%%;*}                              # --parsable: "jobid" or "jobid;cluster"
echo "shards: job $array (array 1-$SHARDS)"
merge=$("$SBATCH" --parsable --dependency=afterok:"$array" --export=ALL "$HERE/merge_shards.sbatch")
echo "merge: job ${merge%%;*}, after every shard of job $array"
