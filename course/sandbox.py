"""Run one notebook in a sandbox: the autograder's worker.

:func:`run_sandboxed` starts bubblewrap (``bwrap``, Debian's ``bubblewrap``, the sandbox behind
Flatpak) and, inside it, this file as a script: the *worker*, which reads the notebook on its
standard input, executes it cell by cell with nbclient in a kernel of its own, and writes the
outcome to a pipe that only it holds. Inside the sandbox

* the file system holds the Python environment and the system's libraries, read-only, and
  private, size-limited ``tmpfs`` folders for ``HOME`` (the kernel's working folder), ``/tmp``
  and ``/dev/shm``; no repository, book, hidden test, reference, other submission or grader
  output, and of the grader's ``HOME`` only the Python installation and environment, where
  they live there (a pyenv version, a virtual environment), read-only; their paths show in
  ``/proc/self/mountinfo``;
* there is no network, and the PID, IPC, UTS, user and cgroup namespaces are its own, so no
  process outside is visible; the sandbox dies with the grader (``--die-with-parent``);
* everything runs as an unprivileged user (uid 1000 inside) with no capabilities, no further
  user namespaces, and an environment of a few variables (the quick profile,
  ``BOOK_SCALE=quick``, and one thread, ``OMP_NUM_THREADS=1``). Outside, that user is the
  grader's own user where the grader is not root; where it is root (a VM, a CI runner, a
  container of one's own), it is the machine's unprivileged ``nobody``, never root
  (:func:`root_user_namespace`), so that a write the kernel decides by uid (``/proc/sys``) is
  refused; ``/proc/sys`` is read-only besides, and ``/sys`` is not there;
* the worker makes itself non-dumpable, so the kernel, though it runs as the same user, cannot
  open the worker's file descriptors or memory through ``/proc``; only the worker holds the
  result channel.

Limits: a time limit per cell (the worker's) and one for the whole submission (the grader kills
the sandbox); and, where the machine lets the grader make a control group (cgroup v2, or v1 with
the memory and pids controllers), a memory and a process limit on the whole submission. Without
one, memory is limited per process (``RLIMIT_AS``) and the number of processes is not limited:
:func:`enforced_limits` says which holds. The outcome is read with a limit on its size and
checked field by field; the printed values are parsed by :func:`course.hidden.value_printed`,
with limits on size and depth.

The worker imports nothing of the grader's (only the standard library, nbformat and nbclient),
so that this file can run alone in the sandbox.
"""

import argparse
import ctypes
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import suppress
from functools import cache
from pathlib import Path

TIMEOUT = "CellTimeout"  # the error name of a cell that ran out of time
HIDDEN_TEST = "hidden_test"  # cell metadata of the cells whose printed output is reported
# characters of a hidden-test cell's printed output that are kept: more than the longest value
# the grader parses (course.hidden.MAX_VALUE_CHARS), so that a longer one is refused as such
MAX_PRINTED = 1_100_000
MAX_ERROR = 2_000  # characters of an error's message that are kept
MAX_RESULT = 16 * MAX_PRINTED  # bytes of the worker's outcome the grader reads
HOME = "/home/student"  # the kernel's home and working folder in the sandbox
WORKER = "/opt/grader/sandbox.py"  # where this file lies in the sandbox
TMPFS_BYTES = 512 * 2**20  # each of HOME, /tmp and /dev/shm
WRITABLE = ("/tmp", HOME, "/dev/shm")  # the sized folders, the only ones a submission writes
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4  # prctl options
CLONE_NEWUSER = 0x10000000
SANDBOX_ID = 1000  # the user and group inside the sandbox
# Where the grader is root: the grader's root is uid (and gid) 1 in the sandbox's user namespace,
# not 0, so that bubblewrap keeps the capabilities it sets the sandbox up with when it switches
# to SANDBOX_ID (the kernel drops them when a user namespace's uid 0 becomes another), and can
# still reach a Python installation under /root; SANDBOX_ID is the machine's nobody.
GRADER_ROOT_INSIDE = 1
GRACE_SECONDS = 5  # how long the sandbox may take to end after the worker's outcome is read
# Modules the worker does without: nbformat validates with jsonschema, which checks IRIs with
# rfc3987_syntax where it is installed, and that module builds its grammar on import (2 s of
# every run, as long as the rest of a short submission); a notebook holds no IRI to check.
UNIMPORTED = ("rfc3987_syntax",)


class SandboxUnavailable(RuntimeError):
    """bubblewrap cannot run a sandbox on this machine."""


# ------------------------------------------------------------------------------ the worker


def _exit_note(client) -> str:
    """Why the kernel died, from its exit status where the kernel manager has it."""
    process = getattr(getattr(client.km, "provisioner", None), "process", None)
    code = process.poll() if process is not None else None
    if code is not None and code < 0:
        return (f"the kernel was killed by signal {-code} (the memory limit or the system's "
                "out-of-memory killer?)")
    if code is not None:
        return f"the kernel exited with status {code} (os._exit or sys.exit in the notebook?)"
    return "the kernel died"


def execute(notebook, timeout: float, cwd: Path) -> dict:
    """Run every code cell of ``notebook`` in one kernel, each interrupted after ``timeout``
    seconds. Returns ``{"cells": {index: None or [ename, evalue]}, "printed": {index: stdout of
    a hidden_test cell}, "note": why it stopped early}``; the cells that ran are the keys, and
    execution stops early only when the kernel dies. Printed output and error messages are cut
    at :data:`MAX_PRINTED` and :data:`MAX_ERROR` characters, and other cells' outputs are
    dropped once recorded. (A cell that swallows KeyboardInterrupt is not stopped by the
    interrupt; the limit of :func:`run_sandboxed` ends it.)"""
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    replies: dict[int, list | None] = {}
    printed: dict[int, str] = {}

    def record(cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        replies[cell_index] = ([str(content.get("ename", "Error"))[:MAX_ERROR],
                                str(content.get("evalue", ""))[:MAX_ERROR]]
                               if content.get("status") == "error" else None)
        if cell.metadata.get(HIDDEN_TEST):
            printed[cell_index] = "".join(
                str(output.get("text", "")) for output in cell.outputs
                if output.get("name") == "stdout")[:MAX_PRINTED]
        cell.outputs = []

    client = NotebookClient(
        notebook, timeout=timeout, allow_errors=True, interrupt_on_timeout=True,
        error_on_timeout={"ename": TIMEOUT, "evalue": f"the cell ran longer than {timeout:g} s",
                          "traceback": []},
        kernel_name="python3", resources={"metadata": {"path": str(cwd)}},
        on_cell_executed=record)
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            try:
                client.execute_cell(cell, index)
            except DeadKernelError:
                return {"cells": replies, "printed": printed, "note": _exit_note(client)}
    return {"cells": replies, "printed": printed, "note": ""}


def _undumpable() -> None:
    """Make this process non-dumpable: a process of the same user without capabilities (the
    kernel) can then neither open its ``/proc/PID/fd`` nor read or write its memory."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def main(argv=None) -> None:
    """The worker: execute the notebook read from standard input, write the outcome to the
    file descriptor ``--result-fd``."""
    _undumpable()
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--result-fd", type=int, required=True)
    args = parser.parse_args(argv)
    os.set_inheritable(args.result_fd, False)  # the kernel and its children never hold it
    result = os.fdopen(args.result_fd, "w")
    sys.modules.update(dict.fromkeys(UNIMPORTED))  # each import now fails, as if not installed
    import nbformat

    notebook = nbformat.reads(sys.stdin.read(), as_version=4)
    outcome = execute(notebook, args.timeout, Path.cwd())
    with result:
        json.dump(outcome, result)


# ------------------------------------------------------------------------------ the grader's side


def _mount_of(kind: str, option: str | None = None) -> Path | None:
    """Where a cgroup hierarchy of type ``kind`` (with ``option``, a v1 controller) is mounted."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if tail and tail[0] == kind and (option is None or option in tail[-1].split(",")):
            return Path(fields[4])
    return None


def _own_cgroup(hierarchy: str) -> str | None:
    """This process's cgroup path in the v1 hierarchy ``hierarchy`` ("" for v2)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if hierarchy in controllers.split(","):
            return path
    return None


def remove_stale(parent: Path) -> None:
    """Remove the empty groups in ``parent`` that a grader no longer running left (one killed
    before it could remove its own): ``grade-<pid>-*`` whose pid is not alive."""
    for folder in parent.glob("grade-*-*"):
        pid = folder.name.split("-")[1]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:  # its grader is gone; a group with processes stays
            with suppress(OSError):
                folder.rmdir()
        except OSError:  # alive, as another user's
            pass


CPU_PERIOD_US = 100_000  # the scheduler's period for the CPU limit, in microseconds


def _cpu_weight() -> int:
    """The CPU weight (cgroup v1's ``cpu.shares``) of a task at the grader's nice value, as the
    kernel weighs nice values (1024 at 0, each step by a factor of 1.25), so that a TA's
    ``nice`` reaches the submissions: in a control group of their own, nothing else does."""
    return max(2, round(1024 / 1.25 ** os.getpriority(os.PRIO_PROCESS, 0)))


class Cgroup:
    """A control group for one submission, with ``memory_bytes`` and ``processes`` limits on
    all its processes together, and where the machine's CPU controller is at hand, ``cpus``
    CPUs at most and the grader's nice value (:attr:`cpu_limited` says whether it is);
    ``Cgroup.make`` returns None where no group with memory and process limits can be made
    here."""

    def __init__(self, folders: list[Path], cpu_limited: bool = False):
        self.folders = folders
        self.cpu_limited = cpu_limited

    @classmethod
    def make(cls, memory_bytes: int, processes: int, cpus: float = 1):
        name = f"grade-{os.getpid()}-{uuid.uuid4().hex[:12]}"  # its grader's pid, for remove_stale
        v2 = _mount_of("cgroup2")
        own = _own_cgroup("")
        if v2 is not None and own is not None:
            remove_stale(v2 / own.lstrip("/"))
            made = cls._make_v2(v2 / own.lstrip("/") / name, memory_bytes, processes, cpus)
            if made:
                return made
        folders = []
        try:
            for controller in ("memory", "pids"):
                folder = cls._v1_folder(controller, name)
                if folder is None:
                    raise OSError(f"no cgroup v1 {controller} controller")
                folders.append(folder)
            (folders[0] / "memory.limit_in_bytes").write_text(str(memory_bytes))
            (folders[1] / "pids.max").write_text(str(processes))
        except OSError:
            cls(folders).remove()
            return None
        try:
            cpu = cls._v1_folder("cpu", name)
        except OSError:
            cpu = None
        if cpu is not None:
            folders.append(cpu)
            try:
                (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
                (cpu / "cpu.cfs_quota_us").write_text(str(round(cpus * CPU_PERIOD_US)))
                (cpu / "cpu.shares").write_text(str(_cpu_weight()))
            except OSError:
                cls(folders).remove()
                return None
        return cls(folders, cpu is not None)

    @staticmethod
    def _v1_folder(controller: str, name: str) -> Path | None:
        """A new group ``name`` in the v1 hierarchy of ``controller``, beside this process's
        own; None where that controller has no hierarchy."""
        mount, own = _mount_of("cgroup", controller), _own_cgroup(controller)
        if mount is None or own is None:
            return None
        remove_stale(mount / own.lstrip("/"))
        folder = mount / own.lstrip("/") / name
        folder.mkdir()
        return folder

    @classmethod
    def _make_v2(cls, folder: Path, memory_bytes: int, processes: int, cpus: float):
        try:
            folder.mkdir()
        except OSError:
            return None
        made = cls([folder], (folder / "cpu.max").exists())
        try:
            (folder / "memory.max").write_text(str(memory_bytes))
            (folder / "memory.swap.max").write_text("0")
            (folder / "pids.max").write_text(str(processes))
            if made.cpu_limited:
                (folder / "cpu.max").write_text(f"{round(cpus * CPU_PERIOD_US)} {CPU_PERIOD_US}")
                (folder / "cpu.weight.nice").write_text(
                    str(os.getpriority(os.PRIO_PROCESS, 0)))
        except OSError:
            made.remove()
            return None
        return made

    def enter(self) -> None:
        """Move the calling process (and so its future children) into the group."""
        for folder in self.folders:
            with open(folder / "cgroup.procs", "w") as procs:
                procs.write(str(os.getpid()))

    def out_of_memory(self) -> bool:
        """Whether the kernel's out-of-memory killer acted in the group."""
        folder = self.folders[0]
        for events in (folder / "memory.events", folder / "memory.oom_control"):
            if events.is_file():
                for line in events.read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and int(value) > 0:
                        return True
        return False

    def remove(self) -> None:
        """Kill every process left in the group, and remove it."""
        for folder in self.folders:
            for _ in range(100):
                try:
                    pids = (folder / "cgroup.procs").read_text().split()
                except OSError:
                    break
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                threading.Event().wait(0.05)
            try:
                folder.rmdir()
            except OSError:
                pass


def _host_paths() -> list[tuple[str, str]]:
    """``(kind, path)`` for what the sandbox shows of the machine: the system's folders
    (symbolic links where the machine has them), the Python installation and environment, and
    the companion library's source folder (for an editable install), all read-only."""
    shown = []
    for name in ("usr", "bin", "lib", "lib64", "lib32", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            shown.append(("symlink", f"{os.readlink(path)}\0/{name}"))
        elif path.is_dir():
            shown.append(("ro-bind", str(path)))
    for name in ("ld.so.cache", "localtime", "fonts", "alternatives"):
        if (Path("/etc") / name).exists():
            shown.append(("ro-bind", f"/etc/{name}"))
    python = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
              Path(sys.executable).resolve().parent.parent}
    import importlib.util
    spec = importlib.util.find_spec("companion")
    if spec is not None and spec.submodule_search_locations:
        python.update(Path(p).resolve() for p in spec.submodule_search_locations)
    shown += [("ro-bind", str(p)) for p in sorted(python)
              if not any(p != q and q in p.parents for q in python)
              and not str(p).startswith("/usr/")]
    return shown


def _supports(option: str) -> bool:
    return option in subprocess.run(["bwrap", "--help"], capture_output=True, text=True).stdout


def _nobody() -> tuple[int, int]:
    """The machine's unprivileged user and group (``nobody``, ``nogroup``; 65534 where the
    system names neither)."""
    import grp
    import pwd
    with suppress(KeyError):
        user = pwd.getpwnam("nobody")
        with suppress(KeyError):
            return user.pw_uid, grp.getgrnam("nogroup").gr_gid
        return user.pw_uid, user.pw_gid
    return 65534, 65534


# Run by a helper process: a new user namespace in which no further one can be made (as
# bubblewrap's --disable-userns does), kept until the grader has opened it.
_MAKE_USERNS = f"""\
import ctypes, sys
if ctypes.CDLL(None, use_errno=True).unshare({CLONE_NEWUSER}) != 0:
    sys.exit(f"unshare(CLONE_NEWUSER) failed (errno {{ctypes.get_errno()}})")
with open("/proc/sys/user/max_user_namespaces", "w") as limit:
    limit.write("0")
print("ready", flush=True)
sys.stdin.read()
"""


def root_user_namespace() -> int:
    """For a grader that runs as root: a file descriptor of a new user namespace, for
    bubblewrap's ``--userns``, in which :data:`SANDBOX_ID` is the machine's ``nobody``
    (:func:`_nobody`), the grader's root is :data:`GRADER_ROOT_INSIDE`, no other user
    exists, and no further user namespace can be made. (bubblewrap's own ``--unshare-user``
    would map the sandbox's user to the grader's, here root, and the kernel decides writes to
    ``/proc/sys`` by that uid.) The caller closes it; ``OSError`` where one cannot be made."""
    helper = subprocess.Popen([sys.executable, "-I", "-c", _MAKE_USERNS], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if helper.stdout.readline() != b"ready\n":
            raise OSError(f"no user namespace for the sandbox could be made "
                          f"({helper.stderr.read().decode(errors='replace').strip()[-300:]})")
        uid, gid = _nobody()
        for kind, host in (("uid", uid), ("gid", gid)):
            with open(f"/proc/{helper.pid}/{kind}_map", "w") as mapping:
                mapping.write(f"{GRADER_ROOT_INSIDE} 0 1\n{SANDBOX_ID} {host} 1\n")
        return os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        helper.kill()
        helper.wait()
        helper.stdout.close()
        helper.stderr.close()
        helper.stdin.close()


def bwrap_command(arguments: list[str], memory_bytes: int, userns: int | None = None) -> list[str]:
    """The bubblewrap command that runs the worker with ``arguments`` in the sandbox; in the
    user namespace ``userns`` (a file descriptor, :func:`root_user_namespace`) where given,
    else in one of bubblewrap's own."""
    tmpfs = str(min(TMPFS_BYTES, memory_bytes))
    if userns is None:
        command = ["bwrap", "--unshare-all", "--unshare-user"]
        if _supports("--disable-userns"):
            command.append("--disable-userns")
    else:
        command = ["bwrap", "--userns", str(userns), "--unshare-ipc", "--unshare-pid",
                   "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    command += ["--die-with-parent", "--new-session", "--uid", str(SANDBOX_ID),
                "--gid", str(SANDBOX_ID), "--hostname", "sandbox"]
    # bubblewrap covers /proc/sys read-only only where access(W_OK) allows, which the kernel
    # never does for that folder: cover it here, whoever the grader is
    command += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]
    for folder in WRITABLE:  # first: a Python under /tmp is bound over it
        command += ["--size", tmpfs, "--tmpfs", folder]
    for kind, path in _host_paths():
        if kind == "symlink":
            command += ["--symlink", *path.split("\0")]
        else:
            command += [f"--{kind}", path, path]
    # bwrap's own root is a tmpfs without a size: read-only, it holds nothing a submission
    # writes, which goes only to the three sized folders above
    command += ["--ro-bind", __file__, WORKER, "--remount-ro", "/", "--chdir", HOME,
                "--clearenv"]
    for name, value in _environment().items():
        command += ["--setenv", name, value]
    return [*command, "--", sys.executable, "-I", WORKER, *arguments]


def _environment() -> dict[str, str]:
    """The whole environment of the worker and the kernel: none of the grader's variables. A
    submission computes on one thread (``OMP_NUM_THREADS``), as the book does, so that the
    submissions graded side by side (``--jobs``) do not spin against each other's threads."""
    return {"HOME": HOME, "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
            "BOOK_SCALE": "quick", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1"}


@cache
def sandbox_available() -> str:
    """"" where bubblewrap runs the sandbox here (a trial run of Python in it), else why not."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (Debian's package bubblewrap: `make bubblewrap`)"
    try:
        userns = root_user_namespace() if os.geteuid() == 0 else None
    except OSError as error:
        return str(error)
    command = bwrap_command([], 2**30, userns)
    trial = f"import sys; sys.modules.update(dict.fromkeys({UNIMPORTED!r})); import nbclient"
    command[command.index("-I") + 1:] = ["-c", trial + ", companion"]  # as the worker starts
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60,
                              pass_fds=() if userns is None else (userns,))
    except (OSError, subprocess.SubprocessError) as error:
        return f"bwrap failed to start ({error})"
    finally:
        if userns is not None:
            os.close(userns)
    if done.returncode:
        return f"bwrap failed here: {done.stderr.strip()[-500:]}"
    return ""


def enforced_limits(memory_gb: float, processes: int) -> str:
    """What the limits are on this machine, in words."""
    memory_bytes = int(memory_gb * 2**30)
    writable = (f"; writable: {', '.join(WRITABLE)}, "
                f"{min(TMPFS_BYTES, memory_bytes) / 2**30:g} GiB each, nothing else")
    group = Cgroup.make(memory_bytes, processes)
    if group is None:
        return (f"memory {memory_gb:g} GiB per process (RLIMIT_AS; no cgroup could be made "
                f"here), processes and CPU not limited{writable}")
    group.remove()
    cpu = ("1 CPU at the grader's nice value" if group.cpu_limited
           else "CPU not limited (no cpu controller)")
    return (f"memory {memory_gb:g} GiB, {processes} processes and {cpu} for the whole "
            f"submission (cgroup){writable}")


def _prepare_worker(memory_bytes: int, group: Cgroup | None):
    """Run in the sandbox's first process before it starts: join the control group, limit each
    process's address space, drop a root grader's supplementary groups, and have the system
    kill it if the grader dies (so a grader killed mid-batch leaves nothing running)."""
    # looked up here, not in the child: a child forked while another of the grader's threads
    # holds the dynamic loader's lock (dlopen, dlsym) would wait for it forever
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    root = os.geteuid() == 0

    def prepare():
        if root:
            os.setgroups([])
        if group is not None:
            group.enter()
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    return prepare


def _read_capped(pipe, received: list) -> None:
    """Read ``pipe`` to its end, keeping at most :data:`MAX_RESULT` + 1 bytes."""
    kept = bytearray()
    while chunk := pipe.read(65536):
        if len(kept) <= MAX_RESULT:
            kept += chunk[:MAX_RESULT + 1 - len(kept)]
    received.append(bytes(kept))


def checked_outcome(data: bytes) -> dict:
    """The worker's outcome, checked field by field; ``ValueError`` for anything else."""
    if len(data) > MAX_RESULT:
        raise ValueError(f"its outcome is larger than {MAX_RESULT} bytes")
    try:
        outcome = json.loads(data)
    except (ValueError, RecursionError):
        raise ValueError("its outcome is not readable") from None
    if not (isinstance(outcome, dict) and set(outcome) == {"cells", "printed", "note"}
            and isinstance(outcome["note"], str) and isinstance(outcome["cells"], dict)
            and isinstance(outcome["printed"], dict)):
        raise ValueError("its outcome has the wrong shape")
    cells, printed = {}, {}
    for key, value in outcome["cells"].items():
        if not (key.isdigit() and (value is None or (
                isinstance(value, list) and len(value) == 2
                and all(isinstance(v, str) for v in value)))):
            raise ValueError("its outcome has the wrong shape")
        cells[int(key)] = value
    for key, value in outcome["printed"].items():
        if not (key.isdigit() and isinstance(value, str) and len(value) <= MAX_PRINTED):
            raise ValueError("its outcome has the wrong shape")
        printed[int(key)] = value
    return {"cells": cells, "printed": printed, "note": outcome["note"][:MAX_ERROR]}


def _wait(worker: subprocess.Popen, seconds: float, stop: threading.Event | None,
          reader: threading.Thread) -> None:
    """Wait until ``worker`` ends, or at most :data:`GRACE_SECONDS` more once ``reader`` has
    read the worker's outcome to its end (the worker has exited or closed it: whatever the
    sandbox still runs, a process that a submission stopped or keeps alive, is killed next);
    raise ``subprocess.TimeoutExpired`` after ``seconds``, or as soon as ``stop`` is set."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        step = min(left, 0.2)  # how long until stop and the outcome are looked at
        try:
            worker.wait(timeout=max(step, 0))
            return
        except subprocess.TimeoutExpired:
            if step >= left or stop is not None and stop.is_set():
                raise
            if not reader.is_alive():  # the outcome is in: give the sandbox a moment to end
                with suppress(subprocess.TimeoutExpired):
                    worker.wait(timeout=min(GRACE_SECONDS, max(left - step, 0)))
                return


def run_sandboxed(notebook, timeout: float, memory_gb: float, max_seconds: float,
                  processes: int = 512, unsafe: bool = False,
                  stop: threading.Event | None = None) -> dict:
    """Execute ``notebook`` in the sandbox (see the module's docstring; ``unsafe``: without one,
    in a fresh temporary folder); see :func:`execute` for the result. The worker and everything
    it started are gone when this returns, at the latest soon after ``stop`` is set (the run of
    another thread, whose grader was interrupted). Raises :class:`SandboxUnavailable` where
    bubblewrap cannot run here, unless ``unsafe``."""
    memory_bytes = int(memory_gb * 2**30)
    if not unsafe and (why := sandbox_available()):
        raise SandboxUnavailable(why)
    userns = root_user_namespace() if not unsafe and os.geteuid() == 0 else None
    read_end, write_end = os.pipe()
    arguments = ["--timeout", str(timeout), "--result-fd", str(write_end)]
    scratch = Path(tempfile.mkdtemp(prefix="grade-")) if unsafe else None
    if unsafe:
        command = [sys.executable, "-I", __file__, *arguments]
        env = {**_environment(), "HOME": str(scratch)}
    else:
        command, env = bwrap_command(arguments, memory_bytes, userns), {"PATH": os.defpath}
    passed = (write_end,) if userns is None else (write_end, userns)
    group = Cgroup.make(memory_bytes, processes)
    try:
        worker = subprocess.Popen(
            command, cwd=scratch or "/", env=env, stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=passed,
            start_new_session=True, preexec_fn=_prepare_worker(memory_bytes, group))
    finally:
        for descriptor in passed:
            os.close(descriptor)
    received: list[bytes] = []
    with os.fdopen(read_end, "rb") as pipe:
        # read while the worker runs: a result larger than the pipe's buffer would block it
        reader = threading.Thread(target=_read_capped, args=(pipe, received))
        reader.start()
        try:
            import nbformat
            worker.stdin.write(nbformat.writes(notebook).encode())
            worker.stdin.close()
        except OSError:
            pass
        try:
            _wait(worker, max_seconds, stop, reader)
            finished, note = True, (
                "the grader's worker failed (its sandbox did not end by itself)"
                if worker.returncode is None else
                f"the grader's worker failed (exit status {worker.returncode})")
        except subprocess.TimeoutExpired:
            finished, note = False, (
                "the grader stopped it" if stop is not None and stop.is_set()
                else f"the submission ran longer than {max_seconds:g} s in all")
        finally:
            try:
                os.killpg(worker.pid, signal.SIGKILL)  # the sandbox's PID namespace goes with it
            except ProcessLookupError:
                pass
            worker.wait()
            out_of_memory = group is not None and group.out_of_memory()
            if group is not None:
                group.remove()
            reader.join()  # the pipe's last writer is gone
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
    if out_of_memory:
        note = (f"the submission ran out of memory (its limit is {memory_gb:g} GiB for all its "
                "processes together)")
    try:
        outcome = checked_outcome(received[0]) if finished else None
    except ValueError as error:
        return {"cells": {}, "printed": {}, "note": f"{note}: {error}"}
    if outcome is None:
        return {"cells": {}, "printed": {}, "note": note}
    if out_of_memory:
        outcome["note"] = note
    return outcome


if __name__ == "__main__":
    main()
