"""A class graded on a real Slurm: course/slurm/grade.sh as a job array, one shard per task,
and course/slurm/merge.sh as a job that waits for the array (``--dependency=afterok``), on a
one-node cluster started here in a temporary folder (munged, slurmctld and slurmd, each with
a configuration of its own), give the grades of one run of the grader over the same class.

Slurm and munge are Debian's (``make slurm``, which ``make test`` runs first; the test runs
it where they are missing). The daemons run as root, as slurmd must to start jobs; the test
is skipped where it is not root, or where Slurm cannot be installed. Every wait is a poll with
a limit of minutes, so that a slow, busy machine only makes it slower."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path

import pytest
from test_course import DOUBLE, SQUARE, answered, indented, submit, toy

from course.assignments import ANSWER

__all__ = ["toy"]  # the toy chapter of test_course, a fixture here too

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "course" / "slurm"
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scontrol", "scancel")
SEED = "2027"
START_SECONDS = 300  # for the node to be idle after the daemons start
GRADE_SECONDS = 1800  # for the array and the merge, from submission to the merge's end
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                "PREEMPTED", "BOOT_FAIL", "DEADLINE"}


def _slurm_missing() -> str:
    """"" where Slurm's daemons and commands and munged are here (installed with ``make
    slurm`` where they are not), else why not."""
    def missing():
        return [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name) is None]
    if missing() and shutil.which("make"):
        subprocess.run(["make", "-s", "-C", str(ROOT), "slurm"], timeout=900,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if names := missing():
        return (f"{', '.join(names)} not found, and `make slurm` could not install Debian's "
                "slurm-wlm and munge")
    return ""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Cluster:
    """A one-node Slurm cluster in ``folder``: a munged with a key of its own, a slurmctld and
    a slurmd, each in the foreground (``-F``, ``-D``) in a process of the test's, and the
    commands pointed at its slurm.conf by ``SLURM_CONF`` (in :attr:`environment`)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.processes: list[subprocess.Popen] = []
        self.environment = {k: v for k, v in os.environ.items()
                            if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))}
        self.environment["SLURM_CONF"] = str(folder / "slurm.conf")

    def configure(self) -> None:
        folder = self.folder
        folder.chmod(0o755)  # munged wants its socket's folder open to all (x), not writable
        for name in ("munge", "state", "spool", "log"):
            (folder / name).mkdir(mode=0o755)
        key = folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        # slurmd -C: this machine's CPUs, sockets, cores, threads and memory, which slurmd
        # checks at registration (a node that claims more than it has is drained)
        found = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True,
                               timeout=120).stdout.splitlines()[0]
        self.node = re.match(r"NodeName=(\S+)", found)[1]
        hardware = re.sub(r"^NodeName=\S+\s*", "", found)
        (folder / "slurm.conf").write_text(f"""\
ClusterName=grade-test
# the node's own name, so that slurmctld knows itself as the controller; its address, so
# that nothing depends on how the name resolves
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={folder}/munge/munge.socket
CredType=cred/munge
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd.log
# no cgroup plugin: processes tracked through /proc, tasks not bound, no cgroup.conf, so
# that slurmd runs in a container too; the grader makes the cgroups of its sandboxes itself
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
# the node is idle once its slurmd registers, whatever state it was in
ReturnToService=2
# a job whose dependency can never be met (a task of the array failed) is cancelled,
# rather than left pending with DependencyNeverSatisfied until the test's time runs out
DependencyParameters=kill_invalid_depend
# a finished job stays in scontrol's view for an hour, however slowly the test polls
MinJobAge=3600
NodeName={self.node} NodeAddr=127.0.0.1 {hardware} State=UNKNOWN
PartitionName=grade Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")

    def wait(self, what: str, seconds: float, done, shown=lambda: ""):
        """Poll ``done()`` each second until it returns something true, which is returned;
        fail after ``seconds``, or at once where a daemon has stopped, saying ``what``, with
        ``shown()`` and the daemons' logs."""
        deadline = time.monotonic() + seconds
        while not (result := done()):
            stopped = [p.args[0] for p in self.processes if p.poll() is not None]
            if stopped or time.monotonic() > deadline:
                why = f"{', '.join(stopped)} stopped" if stopped else f"not within {seconds} s"
                pytest.fail(f"{what}: {why}\n{shown()}\n{self.logs()}")
            time.sleep(1)
        return result

    def start(self) -> None:
        folder = self.folder
        munge = folder / "munge"
        self._start("munged", "munged", "--foreground", f"--socket={munge}/munge.socket",
                    f"--key-file={munge}/munge.key", f"--pid-file={munge}/munged.pid",
                    f"--seed-file={munge}/munged.seed", f"--log-file={munge}/munged.log")
        self.wait("munged's socket", START_SECONDS, (munge / "munge.socket").exists)
        self._start("slurmctld", "slurmctld", "-D")
        self._start("slurmd", "slurmd", "-D", "-N", self.node)
        self.wait(f"the node {self.node} idle", START_SECONDS,
                  lambda: self.run("sinfo", "-h", "-n", self.node, "-o", "%T", check=False)
                  .stdout.strip() == "idle")

    def _start(self, name: str, *command: str) -> None:
        with open(self.folder / "log" / f"{name}.out", "w") as output:  # the daemon's copy
            self.processes.append(subprocess.Popen(  # stays open in it
                command, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.environment, cwd=self.folder, start_new_session=True))

    def run(self, *command: str, check: bool = True, env: dict | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        """A Slurm command on this cluster, with the variables ``env`` added to its
        environment; a failure of the test where it fails, unless told not to ``check``."""
        done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                              env={**self.environment, **(env or {})}, cwd=cwd, check=False)
        if check and done.returncode:
            pytest.fail(f"{' '.join(command)}: {done.stderr}\n{self.logs()}")
        return done

    def state(self, job: str) -> dict[str, str]:
        """scontrol's fields of ``job`` (a job or an array task), e.g. JobState."""
        shown = self.run("scontrol", "show", "job", "-o", job, check=False).stdout
        return dict(re.findall(r"(\w+)=(\S*)", shown.splitlines()[0])) if shown else {}

    def logs(self) -> str:
        """The end of every daemon's log, and the jobs in the queue, to show in a failure."""
        parts = [self.run("squeue", "-a", check=False).stdout]
        for log in sorted((self.folder / "log").glob("*")) + sorted(
                (self.folder / "munge").glob("*.log")):
            parts.append(f"== {log.name}\n" + "\n".join(
                log.read_text(errors="replace").splitlines()[-30:]))
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel every job, stop the daemons (slurmd, slurmctld, munged: the last started
        first, each with what is left of its process group, such as slurmctld's
        slurmscriptd), and kill anything of this cluster's left running: a slurmstepd (slurmd
        starts each in a session of its own) and the processes of a job, found by this
        cluster's SLURM_CONF in their environment."""
        controller = self.processes[1:2]
        with suppress(subprocess.SubprocessError):  # a controller that does not answer
            if controller and controller[0].poll() is None:
                jobs = self.run("squeue", "-h", "-o", "%A", check=False).stdout.split()
                if jobs:
                    self.run("scancel", *jobs, check=False)
                    deadline = time.monotonic() + 120
                    while time.monotonic() < deadline and self.run(
                            "squeue", "-h", check=False).stdout.strip():
                        time.sleep(1)
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                _kill(process.pid, group=True)
                process.wait(timeout=60)
            _kill(process.pid, group=True)
        mark = f"SLURM_CONF={self.environment['SLURM_CONF']}".encode()
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if mark in environment and pid != os.getpid():
                _kill(pid)


def _kill(pid: int, group: bool = False) -> None:
    """SIGKILL to the process ``pid`` (or with ``group``, to the process group it leads),
    where it is still there."""
    with suppress(ProcessLookupError, PermissionError):
        (os.killpg if group else os.kill)(pid, signal.SIGKILL)


@pytest.fixture
def cluster():
    """A one-node Slurm cluster started for the test, stopped after it, pass or fail."""
    if os.geteuid() != 0:
        pytest.skip("slurmd starts a job as its user only when it runs as root; run the test "
                    "as root (CI does)")
    if why := _slurm_missing():
        pytest.skip(why)
    # not under pytest's own folder: munged wants every folder above its socket open to all
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="grade-slurm-")))
    try:
        cluster.configure()
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(cluster.folder, ignore_errors=True)


def thief(toy) -> str:
    """A cell that answers both exercises wherever it can read the class's folder: it runs
    every answer cell of every notebook it finds there (the reference's model answers, a
    classmate's), and answers outright where it can see the hidden tests."""
    folder = str(toy["reference"].parents[1])
    return (f"import glob, json\nfolder = {folder!r}\n"
            "for path in glob.glob(folder + '/**/*.ipynb', recursive=True):\n"
            "    try:\n        cells = json.load(open(path))['cells']\n"
            "    except (OSError, ValueError, KeyError):\n        continue\n"
            "    for cell in cells:\n"
            f"        if {ANSWER!r} in cell['metadata'].get('tags', []):\n"
            "            try:\n                exec(''.join(cell['source']))\n"
            "            except Exception:\n                pass\n"
            "if glob.glob(folder + '/hidden/*.py'):\n" + indented(DOUBLE, SQUARE))


def grade_once(toy, submissions: list[str], *options: str) -> subprocess.CompletedProcess:
    """``python -m course.grade`` on the toy class, from its folder, as grade.sh runs it."""
    return subprocess.run(
        [sys.executable, "-m", "course.grade", "--reference", "instructor/toy.ipynb",
         "--hidden", "hidden", "--seed", SEED, "--memory", "2", *options, "--", *submissions],
        cwd=toy["reference"].parents[1], env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=GRADE_SECONDS, check=False)


@pytest.mark.slow  # starts a Slurm cluster, and grades a class twice: in 3 shards and at once
def test_a_job_array_and_its_merge_give_the_grades_of_one_run(cluster, toy):
    """grade.sh as an array of three tasks of one CPU each over four submissions (an
    honest one, one that looks for the reference and the hidden tests, an empty file, an
    untouched student edition), then merge.sh once the array has succeeded: the CSV and the
    JSON lines of the merged shards are those of one run with --jobs 2, every submission was
    graded in the sandbox under slurmd, and the thief scores nothing."""
    class_folder = toy["reference"].parents[1]
    answered(toy, "honest")
    submit(toy, "thief", thief(toy))
    (toy["submissions"] / "empty.ipynb").write_bytes(b"")
    submit(toy, "untouched")
    submissions = sorted(f"submissions/{p.name}" for p in toy["submissions"].glob("*.ipynb"))
    settings = {"GRADE_BOOK": str(ROOT), "GRADE_CLASS": str(class_folder),
                "GRADE_REFERENCE": "instructor/toy.ipynb", "GRADE_HIDDEN": "hidden",
                "GRADE_SEED": SEED, "GRADE_MEMORY": "2"}

    array = cluster.run("sbatch", "--parsable", "--array=1-3", "--cpus-per-task=1",
                        "--mem=2G", str(SCRIPTS / "grade.sh"), env=settings,
                        cwd=cluster.folder).stdout.strip()
    merge = cluster.run("sbatch", "--parsable", f"--dependency=afterok:{array}", "--mem=1G",
                        str(SCRIPTS / "merge.sh"), env=settings,
                        cwd=cluster.folder).stdout.strip()
    one_run = grade_once(toy, submissions, "--jobs", "2", "--json", "--csv",
                         str(cluster.folder / "one.csv"))  # while the array runs
    assert one_run.returncode == 0, one_run.stderr

    def outputs() -> str:
        return "\n".join(f"== {path.name}\n{path.read_text(errors='replace')}"
                         for path in sorted(cluster.folder.glob("slurm-*.out")))

    def merge_ended() -> dict:
        state = cluster.state(merge)
        return state if state.get("JobState") in FINAL_STATES else {}
    final = cluster.wait("the merge job's end", GRADE_SECONDS, merge_ended, outputs)
    tasks = [cluster.state(f"{array}_{k}") for k in (1, 2, 3)]
    assert [t.get("JobState") for t in tasks] == ["COMPLETED"] * 3, outputs() + cluster.logs()
    assert final["JobState"] == "COMPLETED", outputs() + cluster.logs()

    merged_csv = (class_folder / "grades.csv").read_bytes()
    assert merged_csv == (cluster.folder / "one.csv").read_bytes()
    shards = sorted((class_folder / "shards").glob("shard-*.json"))
    assert [p.name for p in shards] == ["shard-1.json", "shard-2.json", "shard-3.json"]
    assert [len(p.read_text().splitlines()) for p in shards] == [2, 1, 1]
    merged = subprocess.run([sys.executable, "-m", "course.grade", "merge", *map(str, shards),
                             "--json"], capture_output=True, text=True, timeout=300,
                            cwd=class_folder, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout == one_run.stdout

    records = {Path(r["notebook"]).stem: r for r in map(json.loads, merged.stdout.splitlines())}
    assert list(records) == ["empty", "honest", "thief", "untouched"]
    assert {name: r["score"] for name, r in records.items()} == {
        "empty": 0, "honest": 5, "thief": 0, "untouched": 0}
    assert "not a Jupyter notebook" in records["empty"]["error"]
    assert all(r["sandbox"] == "bubblewrap" for r in records.values())
    table = (cluster.folder / f"slurm-{merge}.out").read_text()
    assert all(name in table for name in submissions), table


def test_the_appendix_shows_the_scripts_that_the_test_runs():
    """book/instructors.md includes grade.sh and merge.sh (so that the page and the scripts
    cannot drift apart), and every line fits the page."""
    page = (ROOT / "book" / "instructors.md").read_text(encoding="utf-8")
    for script in ("grade.sh", "merge.sh"):
        assert f"```{{literalinclude}} ../course/slurm/{script}\n:language: bash\n" in page
        lines = (SCRIPTS / script).read_text().splitlines()
        assert lines[0] == "#!/bin/bash" and "set -euo pipefail" in lines
        assert all(len(line) <= 79 for line in lines), script
        assert os.access(SCRIPTS / script, os.X_OK)
    assert "export LC_ALL=C" in (SCRIPTS / "grade.sh").read_text()
