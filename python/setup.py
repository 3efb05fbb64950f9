"""Packages the extension that sieve's CMake tree builds (build/python/sieve/_sieve*.so).

SIEVE_BUILD_DIR names the build folder (default: the repository's build/); when the extension is
not there, scripts/build.sh builds it first. Metadata is in pyproject.toml."""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def build_dir():
    build = os.environ.get("SIEVE_BUILD_DIR") or os.path.join(REPO, "build")
    return build if os.path.isabs(build) else os.path.join(REPO, build)


def built_extension():
    build = build_dir()
    pattern = os.path.join(build, "python", "sieve", "_sieve*.so")
    found = glob.glob(pattern)
    if not found:
        print(f"sieve: {pattern} is missing; building it with scripts/build.sh")
        subprocess.run([os.path.join(REPO, "scripts", "build.sh")], check=True,
                       env=dict(os.environ, SIEVE_BUILD_DIR=build))
        found = glob.glob(pattern)
    if not found:
        raise RuntimeError(f"the sieve extension was not built ({pattern}); is pybind11-dev installed?")
    return found[0]


class BuildWithExtension(build_py):
    """build_py that also copies the prebuilt extension, and the `sieve` executable that the
    package runs for training and corpus building (sieve/bin/sieve), into the package."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "sieve")
        os.makedirs(target, exist_ok=True)
        shutil.copy2(built_extension(), target)
        exe = os.path.join(build_dir(), "sieve")
        if not os.access(exe, os.X_OK):
            raise RuntimeError(f"the sieve executable was not built ({exe})")
        os.makedirs(os.path.join(target, "bin"), exist_ok=True)
        shutil.copy2(exe, os.path.join(target, "bin", "sieve"))


class BinaryDistribution(Distribution):
    """The package holds a compiled module: platform-specific wheel."""

    def has_ext_modules(self):
        return True


setup(
    packages=["sieve"],
    package_data={"sieve": ["*.pyi", "py.typed"]},
    cmdclass={"build_py": BuildWithExtension},
    distclass=BinaryDistribution,
)
