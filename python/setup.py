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


def built_extension():
    build = os.environ.get("SIEVE_BUILD_DIR") or os.path.join(REPO, "build")
    if not os.path.isabs(build):
        build = os.path.join(REPO, build)
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
    """build_py that also copies the prebuilt extension into the package."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "sieve")
        os.makedirs(target, exist_ok=True)
        shutil.copy2(built_extension(), target)


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
