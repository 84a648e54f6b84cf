"""A one-node Slurm cluster on localhost for a test: munged with its own key and socket, slurmctld
and slurmd with their configuration, state and spool in one temporary folder, on ports free at the
start. `with` ends the daemons and every job's processes on any exit. A test killed outright
(SIGKILL) cannot clean up, so the daemons are told to end with it (PR_SET_PDEATHSIG) and a
watchdog in its own session then ends the jobs' processes (slurmstepd leaves slurmd's process
tree: they are found by the SLURM_CONF in their environment) and removes the folder. Debian 12's
slurm-wlm and munge (ci/install-deps.sh); root, since slurmd starts the jobs.

    with local_slurm.Cluster(cpus=2) as cluster:
        job = cluster.sbatch("--array=0-3", "script.sh")
        cluster.wait([job])
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
NODE = "mqanode"


def why_unavailable():
    """Why no cluster can be started here (a missing program, not root), or None."""
    missing = [p for p in PROGRAMS if not shutil.which(p)]
    if missing:
        return f"{', '.join(missing)} not installed (Debian 12: apt-get install slurm-wlm munge; ci/install-deps.sh)"
    if os.geteuid() != 0:
        return "not root: slurmd must run as root to start jobs"
    return None


def _end_with_parent():
    """In the child before exec: SIGTERM when the test process ends, however it ends."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def end_processes_of(conf):
    """SIGKILL to every process whose environment names this cluster's slurm.conf: the jobs'
    slurmstepd, their scripts and what they started."""
    marker = f"SLURM_CONF={conf}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    os.kill(int(pid), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


# The watchdog: waits for the test's process to end, then cleans up after it.
WATCHDOG = """
import os, shutil, sys, time
sys.path.insert(0, sys.argv[4])
import local_slurm
test, conf, folder = int(sys.argv[1]), sys.argv[2], sys.argv[3]
while os.path.exists(f"/proc/{test}") and os.path.exists(folder):
    time.sleep(1)
if os.path.exists(folder):
    local_slurm.end_processes_of(conf)
    shutil.rmtree(folder, ignore_errors=True)
"""


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


class Cluster:
    def __init__(self, cpus):
        self.cpus = cpus
        self.daemons = []
        self.dir = None
        self.watchdog = None

    def __enter__(self):
        # Short: munge's socket path must fit in sun_path (108 bytes).
        self.dir = tempfile.mkdtemp(prefix="mqa-slurm-")
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _start(self):
        for d in ("munge-key", "munge", "state", "spool", "log"):
            os.makedirs(self.path(d))
        os.chmod(self.path("munge-key"), 0o700)
        os.chmod(self.path("munge"), 0o755)
        os.chmod(self.dir, 0o755)
        with open(self.path("munge-key", "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(self.path("munge-key", "munge.key"), 0o600)
        socket_path = self.path("munge", "munge.socket")
        # --force: the socket's folder sits in /tmp, which munged would otherwise refuse.
        self._daemon("munged", ["munged", "--foreground", "--force", f"--socket={socket_path}",
                                f"--key-file={self.path('munge-key', 'munge.key')}",
                                f"--pid-file={self.path('munge', 'munged.pid')}",
                                f"--seed-file={self.path('munge', 'munged.seed')}",
                                f"--log-file={self.path('log', 'munged.log')}"])
        self._wait_for(lambda: os.path.exists(socket_path), "munged's socket")
        ctld_port, d_port = _free_ports(2)
        user = "root" if os.geteuid() == 0 else os.environ.get("USER", "root")
        conf = self.path("slurm.conf")
        with open(conf, "w") as f:
            f.write(f"""ClusterName=mqacheck
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser={user}
AuthType=auth/munge
AuthInfo=socket={socket_path}
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
MinJobAge=3600
StateSaveLocation={self.path('state')}
SlurmdSpoolDir={self.path('spool')}
SlurmctldPidFile={self.path('slurmctld.pid')}
SlurmdPidFile={self.path('slurmd.pid')}
SlurmctldLogFile={self.path('log', 'slurmctld.log')}
SlurmdLogFile={self.path('log', 'slurmd.log')}
MailProg=/bin/true
NodeName={NODE} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN
PartitionName=main Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
""")
        self.env = dict(os.environ, SLURM_CONF=conf)
        self.watchdog = subprocess.Popen(
            [sys.executable, "-c", WATCHDOG, str(os.getpid()), conf, self.dir, os.path.dirname(os.path.abspath(__file__))],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self._daemon("slurmctld", ["slurmctld", "-D", "-f", conf])
        self._daemon("slurmd", ["slurmd", "-D", "-f", conf, "-N", NODE])
        self._wait_for(self._node_idle, f"node {NODE} idle in sinfo")

    def _daemon(self, name, argv):
        log = open(self.path("log", f"{name}.out"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             preexec_fn=_end_with_parent, start_new_session=True)
        log.close()
        self.daemons.append((name, p))

    def _node_idle(self):
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=self.env)
        return r.returncode == 0 and r.stdout.strip() == "idle"

    def _wait_for(self, ready, what, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for name, p in self.daemons:
                if p.poll() is not None:
                    raise RuntimeError(f"{name} ended with status {p.returncode} while waiting for {what}:\n"
                                       + self.logs())
            if ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"no {what} after {seconds} s:\n" + self.logs())

    def logs(self, lines=15):
        """The last lines of every daemon's output, for a failure message."""
        out = []
        for name in sorted(os.listdir(self.path("log"))):
            with open(self.path("log", name), errors="replace") as f:
                tail = f.read().splitlines()[-lines:]
            out.append(f"--- {name}\n" + "\n".join(tail))
        return "\n".join(out)

    def command(self, *argv, **kwargs):
        return subprocess.run(list(argv), capture_output=True, text=True, env=self.env, **kwargs)

    def job_state(self, job):
        """(JobState, ExitCode) of each job of `job` (an array has one per task), by scontrol."""
        r = self.command("scontrol", "-o", "show", "job", str(job))
        states = []
        for line in r.stdout.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            states.append((fields.get("JobState"), fields.get("ExitCode")))
        return states

    def wait(self, jobs, seconds):
        """Waits until none of `jobs` is pending or running; False when `seconds` pass first."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            r = self.command("squeue", "-h", "-o", "%i", "-j", ",".join(map(str, jobs)))
            if r.returncode == 0 and not r.stdout.strip():
                return True
            time.sleep(2)
        return False

    def __exit__(self, *exc):
        if self.daemons and any(n == "slurmctld" and p.poll() is None for n, p in self.daemons):
            subprocess.run(["scancel", "--full", "--user", "root" if os.geteuid() == 0 else os.environ.get("USER", "")],
                           capture_output=True, env=self.env, timeout=30)
        for name, p in reversed(self.daemons):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        self.daemons = []
        if self.dir:
            end_processes_of(self.path("slurm.conf"))
            shutil.rmtree(self.dir, ignore_errors=True)
        if self.watchdog:
            self.watchdog.wait(timeout=30)  # it ends once the folder is gone
        return False
