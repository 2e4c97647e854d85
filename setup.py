"""The build's one step pyproject.toml cannot declare: copying the project's folders (conf/, dbt_project/,
expectations/gx/) into the package as pipelines/_project/, so an installed wheel has its configuration
defaults, dbt project and GX template (pipelines/config/project.py finds them there). An editable install
reads them from the checkout instead."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

# pipelines/config/project.py BUNDLED: the same three folders (not imported: the build runs before the package is)
BUNDLED = ("conf", "dbt_project", "expectations/gx")
# a run's output, never the project's files
NOT_SHIPPED = shutil.ignore_patterns(
    "target",
    "logs",
    ".user.yml",
    "uncommitted",
    "expectations",
    "checkpoints",
    "validation_definitions",
    "__pycache__",
    "*.pyc",
)


class BuildWithProjectFiles(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        for folder in BUNDLED:
            # build/ outlives a build: a file deleted or renamed since must not ship again
            shutil.rmtree(Path(self.build_lib, "pipelines", "_project", folder), ignore_errors=True)
            shutil.copytree(
                folder, Path(self.build_lib, "pipelines", "_project", folder), ignore=NOT_SHIPPED, dirs_exist_ok=True
            )


setup(cmdclass={"build_py": BuildWithProjectFiles})
