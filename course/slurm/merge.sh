#!/bin/bash
# Merge the shards that course/slurm/grade.sh wrote into the grades of one
# run: the tables, printed into this job's output file, and grades.csv.
# Submit it to run once every task of the array ID has succeeded, with the
# same GRADE_BOOK and GRADE_CLASS as grade.sh:
#
#   sbatch --dependency=afterok:ID course/slurm/merge.sh
#
# merge refuses shards of different batches, a shard missing or stopped
# before its end, and a grades.csv that is there already.
#SBATCH --job-name=merge
#SBATCH --cpus-per-task=1
#SBATCH --mem=4G
#SBATCH --time=00:30:00
set -euo pipefail

book=${GRADE_BOOK:-$HOME/course}
cd "${GRADE_CLASS:-$book}"
export PYTHONPATH=$book
"$book/.venv/bin/python" -m course.grade merge shards/shard-*.json \
    --csv grades.csv
