"""The wheel's one addition to pyproject.toml: the repository's shaders/ (the WGSL, one source) as
the package py_core.shaders, so the wheel carries it as package data without a second copy in the
tree. pyproject.toml cannot name a package that `packages.find` does not see on disk."""
from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def find_package_modules(self, package, package_dir):  # this file is the build's, not py_core's
        return [m for m in super().find_package_modules(package, package_dir) if m[:2] != ("py_core", "setup")]


setup(packages=[*find_namespace_packages(where="..", include=["py_core", "py_core.*"],
                                         exclude=["py_core.gpu.native", "py_core.build*", "*__pycache__"]),
                "py_core.shaders"],
      package_dir={"py_core": ".", "py_core.shaders": "../shaders"},
      cmdclass={"build_py": BuildPy})
