"""Package layout that setup.cfg cannot express: the runtime and the templates
live in top-level folders but install as the packages `futgen_runtime` and
`futgen_templates`."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["futgen", "futgen.*"]) + ["futgen_runtime", "futgen_templates"],
    package_dir={"futgen_runtime": "runtime/futgen_runtime", "futgen_templates": "templates"},
    package_data={"futgen_templates": ["*.j2"], "futgen_runtime": ["*.cu", "*.h"]},
)
