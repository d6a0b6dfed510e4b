"""The OpenStack venv: made once, installed from the lock, done again only when the lock changes."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from scripts.openstack_one_machine.layout import PINS, Layout

HERE = Path(__file__).resolve().parent
LOCK = HERE / "requirements.lock"
DRIVER = HERE / "bind_all.py"
DRIVER_MODULE = "ember_bind_all"
DRIVER_ENTRY_POINT = f"[neutron.ml2.mechanism_drivers]\n{DRIVER_MODULE} = {DRIVER_MODULE}:BindAllDriver\n"


def _fingerprint() -> str:
    digest = hashlib.sha256("\n".join(PINS).encode())
    digest.update(LOCK.read_bytes())
    digest.update(DRIVER.read_bytes())
    return digest.hexdigest()


def installed(layout: Layout) -> bool:
    stamp = layout.stamps / "venv"
    return layout.python.exists() and stamp.exists() and stamp.read_text() == _fingerprint()


def _site_packages(layout: Layout) -> Path:
    found = sorted((layout.venv / "lib").glob("python3.*/site-packages"))
    if not found:
        raise RuntimeError(f"no site-packages under {layout.venv}")
    return found[0]


def install_driver(layout: Layout) -> None:
    """Our ML2 mechanism driver as a tiny installed distribution (module + entry point)."""
    site = _site_packages(layout)
    shutil.copyfile(DRIVER, site / f"{DRIVER_MODULE}.py")
    info = site / f"{DRIVER_MODULE}-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DRIVER_MODULE}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(DRIVER_ENTRY_POINT)
    (info / "INSTALLER").write_text("ember\n")
    (info / "RECORD").write_text("")


def install(layout: Layout) -> bool:
    """Make the venv and install the pinned releases; False when it was already there."""
    if installed(layout):
        return False
    if not layout.python.exists():
        subprocess.run([_python311(), "-m", "venv", str(layout.venv)], check=True)
    # Every package is pinned in the lock, so pip resolves nothing and only fetches.
    layout.logs.mkdir(parents=True, exist_ok=True)
    log_path = layout.logs / "install.log"
    with log_path.open("ab") as log:
        result = subprocess.run(
            [str(layout.python), "-m", "pip", "install", "--disable-pip-version-check", "--no-compile",
             "-r", str(LOCK), *PINS],
            stdout=log, stderr=subprocess.STDOUT, check=False,
        )
    if result.returncode != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-20:]
        raise RuntimeError("pip install failed:\n" + "\n".join(tail))
    install_driver(layout)
    layout.stamps.mkdir(parents=True, exist_ok=True)
    (layout.stamps / "venv").write_text(_fingerprint())
    return True


def _python311() -> str:
    """The interpreter the venv is made from: this one when it is 3.11 (and not itself a venv's)."""
    base = Path(sysconfig.get_config_var("BINDIR") or "") / "python3.11"
    if sys.version_info[:2] == (3, 11) and base.exists():
        return str(base)
    found = shutil.which("python3.11")
    if not found:
        raise RuntimeError("the OpenStack services need Python 3.11 (python3.11 not found)")
    return found
