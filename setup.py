"""Build the C extensions (scheduler, step-graph builder); everything else lives in pyproject.toml."""

import os

from setuptools import Extension, setup

# TIERLAB_SANITIZE=1 builds with AddressSanitizer/UBSan for debugging the C code.
extra = ["-O2", "-ffp-contract=off"]
link = []
if os.environ.get("TIERLAB_SANITIZE"):
    extra += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"]
    link += ["-fsanitize=address,undefined"]

setup(ext_modules=[
    Extension(f"simulation.{name}", [f"simulation/{name}.c"], depends=["simulation/_cshared.h"],
              extra_compile_args=extra, extra_link_args=link)
    for name in ("_cscheduler", "_cstepgraph")])
