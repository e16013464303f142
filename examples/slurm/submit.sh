#!/usr/bin/env bash
# Submit the array (one shard per task) and the merge job that runs after it.
#
#   examples/slurm/submit.sh summarize docs/ --rpm 15
#
# Run it from the folder that holds the documents: the jobs' working folder is the folder
# sbatch is called from. Prints the two job ids.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
array=$(sbatch --parsable "$HERE/zhi-array.sbatch" "$@")
array=${array%%;*} # `id;cluster` on a federation
merge=$(sbatch --parsable --dependency="afterany:$array" "$HERE/zhi-merge.sbatch")
merge=${merge%%;*}
echo "array job $array (one shard per task), merge job $merge (after every task of $array)"
