#!/bin/bash
# Grade a class on Slurm: each task of this job array grades one shard of
# the submissions (course.grade --shard K/N --json), K the task's number and
# N the array's number of tasks. sbatch prints the array's job id, ID:
#
#   sbatch course/slurm/grade.sh
#   sbatch --dependency=afterok:ID course/slurm/merge.sh
#
# and the second job merges the shards once every task has succeeded.
# sbatch's options override the #SBATCH lines below (--array=1-20 for 20
# shards, --cpus-per-task, --mem, --time); these variables of the
# environment that sbatch is run in override the defaults:
#
#   GRADE_BOOK       a clone of the book with its .venv (~/course)
#   GRADE_CLASS      the folder of the reference, submissions/ and shards/;
#                    the paths below are relative to it (GRADE_BOOK)
#   GRADE_REFERENCE  the instructor edition (instructor/recognizers.ipynb)
#   GRADE_SEED       the hidden tests' seed, the same for every shard (2027)
#   GRADE_HIDDEN     a folder of hidden tests of your own (the book's)
#   GRADE_MEMORY     GiB per submission (8); a task grades one submission
#                    per CPU at a time: CPUs x GRADE_MEMORY must fit --mem
#
# Every node must see these folders at the same paths, and have bubblewrap.
#SBATCH --job-name=grade
#SBATCH --array=1-10
#SBATCH --cpus-per-task=8
#SBATCH --mem=64G
#SBATCH --time=02:00:00
set -euo pipefail

book=${GRADE_BOOK:-$HOME/course}
cd "${GRADE_CLASS:-$book}"
export LC_ALL=C  # the same order of submissions/*.ipynb on every node
export PYTHONPATH=$book  # where python -m finds the package course

# shard K of N: the array is 1-N (--array=1-10, or 1-10%4), not 0-9
k=${SLURM_ARRAY_TASK_ID:?run this script with sbatch, as a job array}
n=$SLURM_ARRAY_TASK_COUNT
if [ "$SLURM_ARRAY_TASK_MIN" != 1 ] || [ "$SLURM_ARRAY_TASK_MAX" != "$n" ]
then
    echo "grade.sh: give the array as 1-N, not $n tasks numbered" \
        "$SLURM_ARRAY_TASK_MIN to $SLURM_ARRAY_TASK_MAX" >&2
    exit 2
fi

mkdir -p shards
# > writes the shard from its start: a task run again replaces its shard
"$book/.venv/bin/python" -m course.grade \
    --reference "${GRADE_REFERENCE:-instructor/recognizers.ipynb}" \
    --seed "${GRADE_SEED:-2027}" ${GRADE_HIDDEN:+--hidden "$GRADE_HIDDEN"} \
    --memory "${GRADE_MEMORY:-8}" --jobs "${SLURM_CPUS_PER_TASK:-1}" \
    --shard "$k/$n" --json -- submissions/*.ipynb > "shards/shard-$k.json"
