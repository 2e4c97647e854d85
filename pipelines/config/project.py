"""Where the project's files are: the configuration's defaults, the dbt project, the GX template.

Two ways to run the product, one rule each:

- **From a checkout** (``pip install -e .``, the README's set-up): the files are the checkout's
  ``conf/``, ``dbt_project/`` and ``expectations/gx/``, and relative paths in conf (``data``,
  ``.cache/jars``) are relative to the checkout, wherever the command is run from.
- **Installed** (``pip install .`` or a wheel): the build copies those folders into the package as
  ``pipelines/_project/`` (setup.py), read-only; relative paths in conf are relative to the current
  directory, like ``git`` or ``dbt`` run in a project folder, and dbt writes its compiled files and
  logs under the lake's data folder, not into the package.

Either way ``$AUDITLAKE_HOME``, when set, is what relative paths are relative to (not the folder of
an environment file given to ``--env``).
"""

from __future__ import annotations

import os
from pathlib import Path

# this module sits in pipelines/config/: the package is the folder above
PACKAGE_DIR = Path(__file__).resolve().parents[1]
# the folder `pipelines` is imported from: a child Python (the analysts' server) imports it from there
IMPORT_ROOT = PACKAGE_DIR.parent
BUNDLED_DIR = PACKAGE_DIR / "_project"
# the folders the build copies into the package; a checkout has them at its root
BUNDLED = ("conf", "dbt_project", "expectations/gx")
INSTALLED = BUNDLED_DIR.is_dir()
FILES_DIR = BUNDLED_DIR if INSTALLED else IMPORT_ROOT
HOME_ENV = "AUDITLAKE_HOME"

CONF_DIR = FILES_DIR / "conf"
DBT_DIR = FILES_DIR / "dbt_project"
GX_TEMPLATE_DIR = FILES_DIR / "expectations" / "gx"


def home() -> Path:
    """What relative paths in conf are relative to: ``$AUDITLAKE_HOME``, else the checkout, else (installed)
    the current directory."""
    given = os.environ.get(HOME_ENV, "").strip()
    if given:
        return Path(os.path.expanduser(given)).resolve()
    return Path.cwd() if INSTALLED else IMPORT_ROOT


def resolve(text: str) -> Path:
    """A path written in conf (``~`` expanded), made absolute against ``home()``."""
    return home() / os.path.expanduser(text)  # an absolute path stays as it is
