"""Training entry points: the CLI's trainers (`sieve train encoder|verifier|...`) with the same
options, as keyword arguments. The trainers are long-running, resumable processes with their own
logs; they run as a child process so that a crash or Ctrl-C leaves this interpreter intact.

    sieve.train.verifier(model="models/sieve-mini", train="t.csv", out="runs/v", kind="F4", steps=1000)

runs `sieve train verifier --model models/sieve-mini --train t.csv --out runs/v --kind F4 --steps 1000`.
"""
import os
import shutil
import subprocess


def cli_path():
    """The `sieve` executable: $SIEVE_CLI, else the one installed with this package (sieve/bin),
    else the build tree's (build/python/sieve -> build/sieve), else the one on PATH."""
    env = os.environ.get("SIEVE_CLI")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "bin", "sieve"), os.path.join(here, "..", "..", "sieve"),
                 os.path.join(here, "..", "..", "build", "sieve")):
        if os.access(cand, os.X_OK) and os.path.isfile(cand):
            return os.path.abspath(cand)
    found = shutil.which("sieve")
    if found:
        return found
    raise FileNotFoundError("the sieve executable was not found: reinstall the package "
                            "(scripts/install-python.sh), set SIEVE_CLI, or put it on PATH")


def arguments(**options):
    """The command-line flags of keyword options: name_x=v -> --name-x v; True -> --name;
    False and None are left out; a list or tuple -> comma-separated."""
    args = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args


def run(trainer, check=True, **options):
    """Runs `sieve train TRAINER` with `options` as flags (see `sieve train TRAINER --help`);
    its progress goes to this process's stderr. Returns the CompletedProcess; raises
    subprocess.CalledProcessError when it fails and `check`."""
    return subprocess.run([cli_path(), "train", trainer, *arguments(**options)], check=check)


def encoder(**options):
    """`sieve train encoder` (contrastive training, with or without structure-targeted negatives)."""
    return run("encoder", **options)


def verifier(**options):
    """`sieve train verifier` (F2-F4, frozen or end to end)."""
    return run("verifier", **options)


def mlm(**options):
    """`sieve train mlm` (masked-language-model pretraining of a new BERT)."""
    return run("mlm", **options)
