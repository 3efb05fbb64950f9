"""Shared by the contract tests' clients: `sieve serve` started as a process on a free port."""
import contextlib
import subprocess
import time


@contextlib.contextmanager
def sieve_serve(cli, args, log):
    """`CLI serve ARGS --port 0`, logging to `log` (a pathlib.Path): yields its base URL once it
    says it is ready, stops it (SIGTERM) after."""
    with open(log, "w") as f:
        proc = subprocess.Popen([cli, "serve", *args, "--port", "0"], stderr=f, stdout=subprocess.DEVNULL)
    try:
        port = None
        for _ in range(600):
            text = log.read_text()
            if "ready" in text:
                port = int(text.split("127.0.0.1:")[1].split()[0].rstrip(")"))
                break
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        assert port, log.read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)
