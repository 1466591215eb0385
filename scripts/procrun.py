#!/usr/bin/env python3
"""The Procfile runner of ``make run``: start every process, interleave their logs with a
prefix, and on Ctrl-C stop them in an order that loses no work.

    python scripts/procrun.py [-f Procfile] [-p PORT] [--stop-timeout SECONDS] [--last broker]

Each ``name: command`` line of the Procfile runs under ``/bin/sh -c`` in a session of its own
(so a Ctrl-C in the terminal reaches this runner only, which decides who is told what and
when), with ``PORT`` set and Python's output unbuffered. Every line a process prints is shown
as ``12:00:01 worker | …``.

Stopping (Ctrl-C, SIGTERM, or any process exiting by itself):

1. every process except the ``--last`` ones (the broker) gets SIGTERM: gunicorn finishes its
   requests, the Celery worker makes a *warm* shutdown (it takes no new task and finishes the
   ones in flight), beat stops;
2. the runner waits up to ``--stop-timeout`` seconds (``KB_STOP_TIMEOUT``, 60) for them. A
   process still running then gets SIGQUIT: for the worker a *cold* shutdown, which cancels the
   tasks in flight and hands their messages back to the broker at once (tasks are
   acknowledged late), so another worker resumes them without waiting for the visibility
   timeout. A second Ctrl-C skips the wait and goes to this step at once; whatever still runs
   ``--kill-after`` seconds later (10) is killed (SIGKILL), as is everything on a third Ctrl-C;
3. then the ``--last`` processes get SIGTERM: the broker outlives the worker that is handing
   tasks back to it.

The runner exits 0 when it was asked to stop, otherwise with the status of the process that
ended first. Standard library only: it runs before anything else is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def default_stop_timeout() -> float:
    """``KB_STOP_TIMEOUT`` as ``config/environment.py`` declares it (read from the file: the
    ``config`` package itself imports Celery and Django)."""
    spec = importlib.util.spec_from_file_location("_kb_environment", ROOT / "config/environment.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return float(module.Environment()["KB_STOP_TIMEOUT"])


def parse_procfile(text: str) -> list[tuple[str, str]]:
    """``(name, command)`` pairs in file order; blank lines and ``#`` comments are skipped."""
    entries = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, command = line.partition(":")
        name, command = name.strip(), command.strip()
        if (
            not sep
            or not name
            or not command
            or not name.replace("_", "").replace("-", "").isalnum()
        ):
            raise ValueError(f"Procfile line {number} is not 'name: command': {raw!r}")
        if name in dict(entries):
            raise ValueError(f"Procfile line {number}: process {name!r} is declared twice")
        entries.append((name, command))
    return entries


@dataclass
class Proc:
    name: str
    command: str
    popen: subprocess.Popen | None = None
    reader: threading.Thread | None = None
    signals: list[str] = field(default_factory=list)  # what the runner sent, in order

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def send(self, sig: signal.Signals) -> None:
        """SIGTERM and SIGQUIT go to the process itself, which stops its children in its own
        way (a Celery worker's pool processes must finish their tasks, not get the signal);
        SIGKILL goes to its whole group."""
        if not self.running:
            return
        self.signals.append(sig.name)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if sig == signal.SIGKILL:
                os.killpg(self.popen.pid, sig)
            else:
                self.popen.send_signal(sig)

    def reap(self) -> None:
        """Wait for the process; then stop whatever it left behind in its group."""
        self.popen.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        if self.reader is not None:
            self.reader.join(timeout=5)


class Printer:
    """One line at a time from every process, each with its time and a padded name."""

    def __init__(self, names: list[str], out=None):
        self.width = max(len(n) for n in [*names, "procrun"])
        self.out = out or sys.stdout
        self.lock = threading.Lock()

    def line(self, name: str, text: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        with self.lock:
            self.out.write(f"{stamp} {name:<{self.width}} | {text.rstrip()}\n")
            self.out.flush()

    def pump(self, name: str, stream) -> None:
        for raw in iter(stream.readline, b""):
            self.line(name, raw.decode("utf-8", "replace"))
        stream.close()


class Runner:
    def __init__(self, entries, port: int, stop_timeout: float, kill_after: float, last):
        self.procs = [Proc(name, command) for name, command in entries]
        self.port, self.stop_timeout, self.kill_after = port, stop_timeout, kill_after
        self.last = set(last)
        self.printer = Printer([p.name for p in self.procs])
        self.interrupts = 0
        self.stop_requested = threading.Event()
        self.first_exit: tuple[str, int] | None = None

    def say(self, text: str) -> None:
        self.printer.line("procrun", text)

    def start(self) -> None:
        env = dict(os.environ, PORT=str(self.port), PYTHONUNBUFFERED="1")
        for proc in self.procs:
            proc.popen = subprocess.Popen(
                ["/bin/sh", "-c", proc.command],
                cwd=os.getcwd(),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            proc.reader = threading.Thread(
                target=self.printer.pump, args=(proc.name, proc.popen.stdout), daemon=True
            )
            proc.reader.start()
            self.say(f"{proc.name} started (pid {proc.popen.pid})")

    def on_signal(self, signum, _frame) -> None:
        self.interrupts += 1
        self.stop_requested.set()
        if self.interrupts == 2:
            self.say("second interrupt: cancelling the tasks in flight (they go back to the queue)")
        elif self.interrupts >= 3:
            self.say("third interrupt: killing every process")

    def watch(self) -> None:
        """Until asked to stop or until a process ends by itself."""
        while not self.stop_requested.wait(0.2):
            for proc in self.procs:
                code = proc.popen.poll()
                if code is not None:
                    self.first_exit = (proc.name, code)
                    self.say(f"{proc.name} exited with {code}: stopping the others")
                    return
        self.say("stopping (Ctrl-C again to cancel the tasks in flight)")

    def wait_for(self, procs: list[Proc], seconds: float, until_interrupts: int | None) -> None:
        deadline = time.monotonic() + seconds
        while any(p.running for p in procs) and time.monotonic() < deadline:
            if until_interrupts is not None and self.interrupts >= until_interrupts:
                return
            time.sleep(0.1)

    def stop_group(self, procs: list[Proc], patient: bool) -> None:
        """SIGTERM, then (``patient``: after the stop timeout) SIGQUIT, then SIGKILL."""
        for proc in procs:
            proc.send(signal.SIGTERM)
        if patient:
            self.wait_for(procs, self.stop_timeout, until_interrupts=2)
            late = [p for p in procs if p.running]
            if late:
                names = ", ".join(p.name for p in late)
                self.say(f"{names} still running: SIGQUIT (a worker hands its tasks back)")
                for proc in late:
                    proc.send(signal.SIGQUIT)
        self.wait_for(procs, self.kill_after, until_interrupts=3)
        for proc in procs:
            if proc.running:
                self.say(f"{proc.name} did not stop: SIGKILL")
                proc.send(signal.SIGKILL)
        for proc in procs:
            proc.reap()
            self.say(f"{proc.name} stopped ({proc.popen.returncode})")

    def stop(self) -> None:
        first = [p for p in self.procs if p.name not in self.last]
        self.stop_group(first, patient=True)
        self.stop_group([p for p in self.procs if p.name in self.last], patient=False)

    def run(self) -> int:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self.on_signal)
        try:
            self.start()
            self.watch()
        finally:
            self.stop()
        if self.first_exit is not None and not self.interrupts:
            return self.first_exit[1] or 1
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-f", "--procfile", default="Procfile")
    parser.add_argument("-p", "--port", type=int, default=int(os.environ.get("PORT") or 8000))
    parser.add_argument(
        "--stop-timeout",
        type=float,
        default=None,
        help="seconds the processes get to finish their work on Ctrl-C (KB_STOP_TIMEOUT, 60)",
    )
    parser.add_argument("--kill-after", type=float, default=10.0)
    parser.add_argument("--last", default="broker", help="processes stopped after the others")
    args = parser.parse_args(argv)
    entries = parse_procfile(Path(args.procfile).read_text())
    if not entries:
        parser.error(f"{args.procfile} declares no process")
    stop_timeout = args.stop_timeout if args.stop_timeout is not None else default_stop_timeout()
    last = [n.strip() for n in args.last.split(",") if n.strip()]
    runner = Runner(entries, args.port, stop_timeout, args.kill_after, last)
    return runner.run()


if __name__ == "__main__":
    sys.exit(main())
