"""The package list, found rather than kept by hand: every folder under gpubench/, the
shipped kernels (kernels/, installed as `gpubench_kernels`) and the shipped suites
(configs/, installed as `gpubench_configs`). Namespace discovery counts the folders that
hold only data (the C++ headers, the vendored chart scripts, each kernel
family) as packages too, which is how setuptools ships their files. Everything else about
the package is in pyproject.toml: its `packages` key takes a hand-kept list or a find
directive, and the find directive cannot rename kernels/."""

from setuptools import find_namespace_packages, setup

NOT_CODE = ["*__pycache__*"]
gpubench = find_namespace_packages(include=["gpubench", "gpubench.*"], exclude=NOT_CODE)
kernels = [f"gpubench_kernels.{name}" for name in
           find_namespace_packages(where="kernels", exclude=NOT_CODE)]
# configs/ holds only the shipped suites, installed as the data package gpubench_configs.
setup(packages=[*gpubench, "gpubench_kernels", *kernels, "gpubench_configs"])
