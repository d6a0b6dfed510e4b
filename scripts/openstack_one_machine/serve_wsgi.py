"""Serve one OpenStack WSGI app with gunicorn, started from Python (runs in the OpenStack venv).

    venv/bin/python serve_wsgi.py MODULE HOST:PORT -- PROG [ARG...]

Neutron and Cinder parse the process's command line when their app is imported,
so gunicorn is not run as a command: this process sets ``sys.argv`` to the app's
own (``PROG ARG...``, e.g. ``--config-file``) and hands gunicorn its settings in
code. gunicorn's control socket (one fixed path in ``$HOME``, which a second
gunicorn on the machine would trip on) is turned off.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from gunicorn.app.base import BaseApplication


class OneApp(BaseApplication):  # type: ignore[misc]
    def __init__(self, module: str, bind: str) -> None:
        self.module = module
        self.bind = bind
        super().__init__()

    def load_config(self) -> None:
        settings: dict[str, Any] = {
            "bind": self.bind,
            "workers": 1,
            "worker_class": "gthread",
            "threads": 8,
            "timeout": 300,
            "graceful_timeout": 5,
            "control_socket_disable": True,
            "proc_name": self.module,
        }
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        return importlib.import_module(self.module).application


def main(argv: list[str]) -> None:
    module, bind, separator, *app_argv = argv
    if separator != "--" or not app_argv:
        raise SystemExit("usage: serve_wsgi.py MODULE HOST:PORT -- PROG [ARG...]")
    sys.argv = app_argv
    OneApp(module, bind).run()


if __name__ == "__main__":
    main(sys.argv[1:])
