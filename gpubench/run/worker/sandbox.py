"""The task worker's writes, limited by Landlock before any variant code runs.

Why: a variant runs as the user, in the worker; what it writes outlives it. Some files are
trusted by later runs without a check: the ceilings cache (a forged one turns "99% comp"
into "6% mem" with no warning), bytecode that CPython would run instead of a trusted source
(gpubench's own modules, their bytecode prefix), the run index. Once the worker's start-up
has done its legitimate writing (the ceilings measured or checked, their cache written),
it restricts itself, and every process it starts after, to writing where its work writes:

  its scratch folder     TMPDIR (run/lanes/scratch.py): compilers' temporary files,
                         tempfile, CUPTI's records
  builds, pch            <cache>/extensions and <cache>/pch: a build the build phase left
                         to the worker (build/compile.py), ninja's work folders
  inductor               TORCHINDUCTOR_CACHE_DIR (families/compiled.py sets it under
                         gpubench's cache): torch.compile's code, its Triton kernels
  triton                 <TRITON_HOME or ~>/.triton and TRITON_CACHE_DIR: Triton's JIT
  torch extensions       TORCH_EXTENSIONS_DIR or ~/.cache/torch_extensions: a variant's own
                         torch.utils.cpp_extension.load_inline
  torch kernels          PYTORCH_KERNEL_CACHE_PATH or ~/.cache/torch/kernels: the jiterator's
                         NVRTC kernels (complex and special elementwise ops on a GPU)
  CUDA's cache           CUDA_CACHE_PATH or ~/.nv: the driver's JIT of PTX (ComputeCache)
  devices (/dev)         opening the GPU's device files for writing, /dev/null, /dev/shm

Reads, execution, ioctls, sockets and signals stay unrestricted; only the rights to write,
truncate, create, remove, rename and link files are handled. A write elsewhere fails with
PermissionError (EACCES); CPython's own bytecode writes fail silently, as in a read-only
tree. Landlock (Linux >= 5.13) needs no privilege: prctl(PR_SET_NO_NEW_PRIVS) first, then
a ruleset, its rules and landlock_restrict_self, through libc's syscall(). ABI 2 (Linux
5.19) is required: under ABI 1 every rename across folders is refused, and Triton's cache
renames each kernel from a folder of its own into place. Where the kernel has no usable
Landlock the worker says so in its hello (env["sandbox"]) and runs as before; the parent's
check of the ceilings cache (run/lanes/ceilings_guard.py) holds either way.
GPUBENCH_SANDBOX=0 turns the sandbox off (debugging a variant that must write elsewhere).

Limits: Landlock restricts the thread that asks and what it starts afterwards; the worker
asks from its main thread once its start-up threads have ended, and names any other thread
still alive in its log. A process started before (the judge, the watchdog) is not
restricted: neither runs variant code. Folders that hold builds stay writable, so a
variant can still spoil a cached build of another variant (its marker's sha256 is beside
it); it cannot reach the ceilings, gpubench's bytecode or a problem's files.
"""

from __future__ import annotations

import ctypes
import errno
import os
import threading
from dataclasses import dataclass
from pathlib import Path

OFF_VARIABLE = "GPUBENCH_SANDBOX"  # "0": no sandbox

# Landlock's system calls: one number on every architecture that has them (x86_64, arm64).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1 << 0  # landlock_create_ruleset(NULL, 0, this): the ABI version
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38  # required before an unprivileged landlock_restrict_self
# Never gaining privileges (a setuid program run from the worker runs as the user) is what
# Landlock asks of an unprivileged process: nothing the worker runs needs more.
O_PATH = getattr(os, "O_PATH", 0o10000000)

# Filesystem access rights (uapi linux/landlock.h); ABI 1 unless said.
WRITE_FILE = 1 << 1
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2: link or rename into another folder
TRUNCATE = 1 << 14  # ABI 3
WRITES_ABI1 = (WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG
               | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM)
# The oldest ABI used: ABI 1 refuses every rename across folders (see the docstring).
MIN_ABI = 2


def handled_rights(abi: int) -> int:
    """Every write right `abi` knows of: all of them are handled, so each is refused
    outside the rules. Read, execute and (ABI 5) device ioctls are not handled: allowed."""
    rights = WRITES_ABI1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


@dataclass(frozen=True)
class Plan:
    """What the worker will restrict itself to: the ABI (0: no sandbox), the folders it
    may write under (label, path), and why there is no sandbox when there is none."""

    abi: int
    writable: tuple[tuple[str, str], ...] = ()
    reason: str = ""

    @property
    def active(self) -> bool:
        return self.abi >= MIN_ABI

    def describe(self) -> str:
        """The line for the worker's hello (env["sandbox"], kept in results.json)."""
        if not self.active:
            return f"none: {self.reason}"
        folders = ", ".join(f"{label} {path}" for label, path in self.writable)
        return f"landlock ABI {self.abi}: writes limited to {folders}"


def abi_version() -> int:
    """The kernel's Landlock ABI; 0 when it has none (not built, or not among the LSMs
    it booted with) or when this is no Linux."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                               ctypes.c_uint32(CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def writable_folders(environ, device: str) -> list[tuple[str, Path, bool]]:
    """(label, folder, make it if missing) for each place the worker's work writes (the
    table in the module's docstring). gpubench's own folders are made; the JITs' caches
    on a GPU only, where those JITs run (a CPU worker's Triton interprets, its CUDA is
    absent): an empty folder there is what the JIT would have made. Pure but for paths."""
    from gpubench.build.cache import cache_base
    from gpubench.families.compiled import inductor_cache_dir

    home = Path(environ.get("HOME") or Path.home())
    user_cache = Path(environ.get("XDG_CACHE_HOME") or home / ".cache")
    gpu = device == "cuda"
    scratch = environ.get("TMPDIR") or "/tmp"
    found = [("TMPDIR", Path(scratch), True),
             ("builds", cache_base(environ) / "extensions", True),
             ("pch", cache_base(environ) / "pch", True),
             ("inductor", Path(environ.get("TORCHINDUCTOR_CACHE_DIR") or inductor_cache_dir()),
              True),
             ("triton", Path(environ.get("TRITON_HOME") or home) / ".triton", gpu)]
    found += [("triton", Path(environ[name]), gpu)
              for name in ("TRITON_CACHE_DIR", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR")
              if environ.get(name)]
    found += [("torch extensions", Path(environ.get("TORCH_EXTENSIONS_DIR")
                                        or user_cache / "torch_extensions"), gpu),
              ("torch kernels", Path(environ.get("PYTORCH_KERNEL_CACHE_PATH")
                                     or user_cache / "torch" / "kernels"), gpu),
              ("CUDA's cache", Path(environ.get("CUDA_CACHE_PATH") or home / ".nv"), gpu),
              ("devices", Path("/dev"), False)]
    return found


def plan(device: str, environ=None) -> Plan:
    """The sandbox this worker can have: folders made where they are to be, those that
    exist listed. Called during the start-up (before the hello that reports it)."""
    environ = os.environ if environ is None else environ
    if environ.get(OFF_VARIABLE, "1") == "0":
        return Plan(0, reason=f"turned off ({OFF_VARIABLE}=0)")
    abi = abi_version()
    if abi == 0:
        return Plan(0, reason="this kernel has no Landlock (Linux >= 5.13 with landlock "
                              "among its security modules)")
    if abi < MIN_ABI:
        return Plan(0, reason=f"Landlock ABI {abi} refuses every rename across folders, "
                              f"which Triton's cache makes (ABI {MIN_ABI}: Linux 5.19)")
    writable: list[tuple[str, str]] = []
    for label, folder, make in writable_folders(environ, device):
        if make:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError:
                continue  # not there: nothing may write it
        if folder.is_dir() and (label, str(folder)) not in writable:
            writable.append((label, str(folder)))
    return Plan(abi, tuple(writable))


class _RulesetAttr(ctypes.Structure):
    # struct landlock_ruleset_attr, as of ABI 1 (later fields, network and scopes, are
    # left out: the kernel takes the size given, and handles nothing it was not told of).
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # struct landlock_path_beneath_attr is packed
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def apply(chosen: Plan) -> str:
    """Restrict this thread, and every thread and process it starts from now on, to
    `chosen`; returns the worker log's line. Raises OSError when the kernel refuses."""
    if not chosen.active:
        return f"[gpubench worker] sandbox: none: {chosen.reason}"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    rights = handled_rights(chosen.abi)
    attr = _RulesetAttr(rights)
    ruleset = libc.syscall(ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr),
                           ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        _raise("landlock_create_ruleset")
    try:
        for _, folder in chosen.writable:
            _allow(libc, ruleset, folder, rights)
        no_new_privs = [ctypes.c_ulong(value) for value in (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)]
        if libc.prctl(*no_new_privs) != 0:  # unsigned longs: prctl reads its arguments so
            _raise("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(ruleset),
                        ctypes.c_uint32(0)) != 0:
            _raise("landlock_restrict_self")
    finally:
        os.close(ruleset)
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    unrestricted = f"; threads started before it, unrestricted: {', '.join(others)}" \
        if others else ""
    return f"[gpubench worker] sandbox: {chosen.describe()}{unrestricted}"


def _allow(libc, ruleset: int, folder: str, rights: int) -> None:
    """Every handled right beneath `folder`; one that is gone by now is skipped (it
    would grant nothing)."""
    try:
        fd = os.open(folder, O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        rule = _PathBeneathAttr(rights, fd)
        if libc.syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(ruleset),
                        ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule),
                        ctypes.c_uint32(0)) != 0:
            _raise(f"landlock_add_rule({folder})")
    finally:
        os.close(fd)


def _raise(call: str):
    code = ctypes.get_errno()
    raise OSError(code, f"{call}: {os.strerror(code) or errno.errorcode.get(code, code)}")
