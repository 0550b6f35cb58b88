"""The grading kernel: runs one submission's cells in a fresh, sandboxed process.

Started by ``run.py`` as ``python -I -m compile_course.grading.child CMD_FD RES_FD``.
Trusted code runs first: it confines the process (private mount namespace
hiding the instructor's files, private /tmp, no network, resource limits, an
unprivileged uid), imports the course's libraries and records fingerprints of
the objects tests rely on. Only then are cells received, one at a time, over a
private pipe; each reply echoes the nonce the parent sent with that cell, so a
reply cannot be prepared before the cell exists. The parent, not this process,
decides verdicts (see ``verdict.py``).

Nothing here trusts the student, but everything here shares a process with the
student: a determined attacker can defeat in-process checks. They are tripwires,
backed by the static scan and by the OS-level confinement.
"""

from __future__ import annotations

import builtins
import ctypes
import hashlib
import importlib
import json
import os
import resource
import sys

CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 1, 2, 4, 0x1000, 0x2000, 0x4000, 1 << 18

PROTECTED_ATTRS = [
    "torch.equal", "torch.allclose", "torch.isclose", "torch.manual_seed", "torch.compile",
    "torch.testing.assert_close", "torch._dynamo.explain", "torch._dynamo.reset",
    "torch.compiler.reset", "torch.compiler.set_stance",
    "torch._dynamo.testing.CompileCounter", "torch._dynamo.testing.CompileCounterWithBackend",
    "torch.Tensor.equal", "torch.Tensor.allclose", "torch.Tensor.__eq__", "torch.Tensor.__bool__",
    "torch.Tensor.item", "torch.Tensor.all", "torch.Tensor.any", "torch.Tensor.tolist",
]
PROTECTED_BUILTINS = [
    "AssertionError", "Exception", "BaseException", "print", "isinstance", "issubclass", "getattr",
    "hasattr", "len", "bool", "all", "any", "abs", "repr", "str", "type", "callable", "__import__",
    "__build_class__", "exec", "compile", "open", "range", "zip", "sum", "min", "max", "float", "int",
]
COURSE_MODULES = ["compile_course", "compile_course.comparison", "compile_course.diagnostics",
                  "compile_course.timing", "compile_course.boundary", "compile_course.session",
                  "compile_course.quiet", "compile_course.checks"]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def confine(cfg: dict) -> list[str]:
    """Apply the sandbox described by ``cfg``; return what could not be applied."""
    missing = []
    libc = _libc()
    if os.geteuid() == 0 and libc.unshare(CLONE_NEWNS) == 0:
        libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
        for path in cfg.get("hide", []):
            if os.path.isdir(path):
                if libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, b"size=1m,mode=000") != 0:
                    missing.append(f"could not hide {path}")
        missing += _private_tmp_keeping_course(libc, unprivileged=bool(cfg.get("uid")))
        if libc.unshare(CLONE_NEWNET) != 0:
            missing.append("network not isolated")
    else:
        missing.append("no private mount namespace: instructor files are only protected by the static scan")
    os.makedirs(cfg["workdir"], exist_ok=True)
    for sub in ("home", "cache"):
        os.makedirs(os.path.join(cfg["workdir"], sub), exist_ok=True)
    if os.geteuid() == 0 and cfg.get("uid"):
        uid = cfg["uid"]
        for root, dirs, files in os.walk(cfg["workdir"]):
            for name in [root] + [os.path.join(root, d) for d in dirs]:
                os.chown(name, uid, uid)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    elif cfg.get("uid"):
        missing.append("not root: running as the grader's own user")
    libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: die with the grader (set after setuid, which clears it)
    os.chdir(cfg["workdir"])
    env = {"HOME": os.path.join(cfg["workdir"], "home"),
           "TORCHINDUCTOR_CACHE_DIR": os.path.join(cfg["workdir"], "cache", "inductor"),
           "TRITON_CACHE_DIR": os.path.join(cfg["workdir"], "cache", "triton"),
           "XDG_CACHE_HOME": os.path.join(cfg["workdir"], "cache"), "TMPDIR": "/tmp"}
    os.environ.update(env)
    if cfg.get("memory_bytes"):
        resource.setrlimit(resource.RLIMIT_AS, (cfg["memory_bytes"], cfg["memory_bytes"]))
    if cfg.get("file_bytes"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_bytes"], cfg["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    nproc = cfg.get("max_processes")
    if nproc and os.geteuid() != 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    return missing


def _course_paths() -> list[str]:
    """Directories the kernel must still reach: the course checkout (its src/ and, usually,
    its .venv), the virtual environment and the Python installation."""
    from compile_course.paths import ROOT

    paths = {os.path.realpath(p) for p in (ROOT, sys.prefix, sys.base_prefix)}
    outermost = []
    for p in sorted(paths, key=len):
        if not any(p == q or p.startswith(q + os.sep) for q in outermost):
            outermost.append(p)
    return outermost


def _first_blocked_ancestor(path: str) -> str | None:
    """The first proper ancestor of ``path`` that other users cannot traverse (e.g. /root)."""
    current = "/"
    for part in path.strip("/").split("/")[:-1]:
        current = os.path.join(current, part)
        if not os.stat(current).st_mode & 0o001:
            return current
    return None


def _private_tmp_keeping_course(libc, unprivileged: bool) -> list[str]:
    """Give the kernel an empty private /tmp, and (for an unprivileged uid) cover directories it
    could not traverse anyway, then bind back the course paths that lay under them.

    Each course path is opened before anything is covered, so it can be bound back from its
    descriptor; the bind is recursive, so the tmpfs mounts hiding solutions/ and the other
    instructor folders inside the checkout stay in place. A checkout under /tmp (as in a CI
    clone) or under /root therefore keeps working, and nothing else there is visible.
    """
    keep = _course_paths()
    covers = ["/tmp"]
    if unprivileged:
        covers += [a for a in map(_first_blocked_ancestor, keep) if a]
    covers = [c for c in sorted(set(covers), key=len)
              if not any(c.startswith(o + os.sep) for o in sorted(set(covers), key=len) if o != c)]
    fds = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in keep
           if any(p.startswith(c + os.sep) for c in covers)}
    missing = []
    for cover in covers:
        opts = b"size=1g,mode=1777" if cover == "/tmp" else b"size=1m,mode=755"
        if libc.mount(b"tmpfs", cover.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts) != 0:
            missing.append(f"could not cover {cover}")
    for path, fd in fds.items():
        os.makedirs(path, exist_ok=True)
        if libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None) != 0:
            missing.append(f"could not keep {path} reachable")
        os.close(fd)
    return missing


def _matplotlib_dir() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("matplotlib")
    return os.path.dirname(spec.origin) + os.sep if spec and spec.origin else None


MATPLOTLIB_DIR = _matplotlib_dir()


def _from_matplotlib(fn) -> bool:
    """pyplot registers a post_execute hook when imported under IPython; that one is expected."""
    code = getattr(fn, "__code__", None)
    return bool(MATPLOTLIB_DIR and code is not None and code.co_filename.startswith(MATPLOTLIB_DIR))


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:cut]))
        if mod is not None:
            obj = mod
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            return obj
    raise LookupError(dotted)


def _fp_object(obj) -> str:
    code = getattr(obj, "__code__", None)
    if code is not None and hasattr(code, "co_code"):
        digest = hashlib.sha1(code.co_code + repr(code.co_consts).encode()).hexdigest()[:12]
        return f"{id(obj)}:{id(code)}:{digest}"
    return str(id(obj))


class Kernel:
    """Holds the shell, the protected objects and the capped output streams."""

    def __init__(self, cfg: dict):
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.enabled = False
        config.InteractiveShell.colors = "nocolor"
        self.shell = InteractiveShell.instance(config=config)
        # Tracebacks would print the (possibly hidden) test code: report type and message only.
        self.shell.showtraceback = lambda *a, **k: None
        self.shell.showsyntaxerror = lambda *a, **k: None
        self.output_cap = cfg.get("cell_output_chars", 20000)
        self.protected_modules = {}
        for name in ["torch", "torch.testing", "torch._dynamo", "torch._dynamo.testing", "torch.compiler"] + COURSE_MODULES:
            try:
                self.protected_modules[name] = importlib.import_module(name)
            except ImportError:
                pass
        self.pins: dict[str, str] = {}
        self.real_stdout, self.real_stderr = sys.stdout, sys.stderr

    def fingerprints(self) -> dict[str, str]:
        fp: dict[str, str] = {}
        for name, mod in self.protected_modules.items():
            fp[f"sys.modules[{name}]"] = "ok" if sys.modules.get(name) is mod else f"replaced:{id(sys.modules.get(name))}"
            if name.startswith("compile_course"):
                for attr, value in list(vars(mod).items()):
                    if getattr(value, "__module__", "") == name and callable(value):
                        fp[f"{name}.{attr}"] = _fp_object(value)
                        if isinstance(value, type):
                            for meth, fn in list(vars(value).items()):
                                if callable(fn) or isinstance(fn, (staticmethod, classmethod, property)):
                                    fp[f"{name}.{attr}.{meth}"] = _fp_object(fn)
        for dotted in PROTECTED_ATTRS:
            try:
                fp[dotted] = _fp_object(_resolve(dotted))
            except Exception as exc:  # a deleted attribute is a change too
                fp[dotted] = f"missing:{type(exc).__name__}"
        for name in PROTECTED_BUILTINS:
            fp[f"builtins.{name}"] = _fp_object(builtins.__dict__.get(name))
            fp[f"notebook binding of builtin {name}"] = _fp_object(self.shell.user_ns.get(name))
        for name, expected in self.pins.items():
            fp[f"notebook name {name}"] = "ok" if _fp_object(self.shell.user_ns.get(name)) == expected else "rebound"
        sh = self.shell
        fp["sys.gettrace"] = repr(sys.gettrace())
        fp["sys.getprofile"] = repr(sys.getprofile())
        fp["threading trace/profile"] = repr((getattr(sys.modules.get("threading"), "_trace_hook", None),
                                              getattr(sys.modules.get("threading"), "_profile_hook", None)))
        fp["sys.excepthook"] = _fp_object(sys.excepthook)
        fp["sys.meta_path"] = repr([id(x) for x in sys.meta_path])
        fp["shell hooks"] = repr([id(x) for x in sh.input_transformers_cleanup + sh.input_transformers_post + sh.ast_transformers])
        fp["shell events"] = repr({k: [id(f) for f in v if not _from_matplotlib(f)] for k, v in sh.events.callbacks.items()})
        fp["shell methods"] = repr([_fp_object(getattr(type(sh), m)) for m in ("run_cell", "run_cell_async", "run_ast_nodes", "run_code", "transform_cell")]
                                   + [id(sh.__dict__.get(m)) for m in ("run_cell", "run_cell_async", "run_ast_nodes", "run_code", "transform_cell", "showtraceback")]
                                   + [id(sh.user_ns), id(sh.user_ns.get("__builtins__")), id(sh.custom_exceptions)])
        fp["grader functions"] = repr([_fp_object(f) for f in (Kernel.run, Kernel.fingerprints, _fp_object, _resolve, main, json.dumps, os.write)])
        return fp

    def pin(self, names: list[str]) -> None:
        """Remember what a trusted cell just bound; a later rebinding is tampering."""
        for name in names:
            if name in self.shell.user_ns:
                self.pins[name] = _fp_object(self.shell.user_ns[name])

    def run(self, code: str) -> dict:
        out = CappedWriter(self.output_cap)
        sys.stdout = sys.stderr = out
        try:
            result = self.shell.run_cell(code, store_history=False, silent=False)
        finally:
            sys.stdout, sys.stderr = self.real_stdout, self.real_stderr
        error = result.error_before_exec or result.error_in_exec
        reply = {"status": "ok" if result.success and error is None else "error", "stdout": out.text(), "truncated": out.dropped}
        if error is not None:
            reply["ename"] = type(error).__name__
            reply["evalue"] = _safe_str(error)[:4000]
        return reply


class CappedWriter:
    """A text stream that keeps the first ``cap`` characters and counts the rest."""

    def __init__(self, cap: int):
        self.cap, self.parts, self.kept, self.dropped = cap, [], 0, 0

    def write(self, s) -> int:
        s = str(s)
        room = self.cap - self.kept
        if room > 0:
            self.parts.append(s[:room])
            self.kept += min(len(s), room)
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def text(self) -> str:
        return "".join(self.parts)


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:
        return "<unprintable message>"


def main(argv: list[str]) -> int:
    cmd = os.fdopen(int(argv[1]), "r", encoding="utf-8")
    res_fd = int(argv[2])

    def send(obj: dict) -> None:
        data = (json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(res_fd, data):]

    setup = json.loads(cmd.readline())
    missing = confine(setup["sandbox"])
    kernel = Kernel(setup)
    send({"nonce": setup["nonce"], "op": "ready", "sandbox_missing": missing, "fp": kernel.fingerprints()})
    for line in cmd:
        msg = json.loads(line)
        if msg["op"] == "stop":
            break
        check = msg.get("check", False)
        before = kernel.fingerprints() if check else None
        reply = kernel.run(msg["code"])
        if msg.get("pin"):
            kernel.pin(msg["pin"])
        reply.update(nonce=msg["nonce"], index=msg["index"])
        if check:
            reply["fp_before"], reply["fp_after"] = before, kernel.fingerprints()
        send(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
