"""Assertion rewriting done once per run, ahead of the pytest-xdist workers.

Every worker collects every test module, and pytest rewrites a module's asserts as it imports
it: about 9 s of CPU per worker for this suite, more than half of collecting it. pytest keeps a
rewritten module in ``__pycache__`` (a pyc checked against its source's hash) and any later
process reads it back, but it writes none when bytecode writing is off
(``PYTHONDONTWRITEBYTECODE``, a clean clone's CI), and the workers of one run, starting
together, each rewrite every module before another has written it. So the controller of a
``-n`` run rewrites the test modules whose pyc is missing or stale, once, on as many processes
as there are cores (and workers), before it starts the workers, which then read them: the code
pytest itself would write, where pytest reads it.

A module that cannot be rewritten here (a syntax error, a folder that cannot be written) is
left to the workers, which report it as they always have.
"""

from __future__ import annotations

import fnmatch
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from _pytest.assertion import rewrite  # pytest's own rewriting and pyc format: one code path

_config: pytest.Config | None = None  # the controller's, for the processes it forks


def _pyc(source: Path) -> Path:
    """Where pytest reads the rewritten module of ``source``."""
    return rewrite.get_cache_dir(source) / (source.name[:-3] + rewrite.PYC_TAIL)


def _rewrite(source: Path) -> bool:
    """Rewrite ``source`` and write its pyc as pytest does (a whole file, renamed into place)."""
    assert _config is not None
    pyc = _pyc(source)
    try:
        source_hash, code = rewrite._rewrite_test(source, _config)
        pyc.parent.mkdir(exist_ok=True)
        partial = pyc.with_name(f"{pyc.name}.{os.getpid()}")
        with open(partial, "wb") as fp:
            rewrite._write_pyc_fp(fp, source_hash, code)
        os.replace(partial, pyc)
    except (OSError, SyntaxError, ValueError):
        return False
    return True


def _test_modules(config: pytest.Config) -> list[Path]:
    """The test modules and conftest files under the paths this run collects."""
    patterns = [*config.getini("python_files"), "conftest.py"]
    found: set[Path] = set()
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0])
        candidates = path.rglob("*.py") if path.is_dir() else [path]
        found.update(
            candidate
            for candidate in candidates
            if any(fnmatch.fnmatch(candidate.name, pattern) for pattern in patterns)
        )
    return sorted(found)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which starts the workers
def pytest_sessionstart(session: pytest.Session) -> None:
    """On the controller of a ``-n`` run, rewrite the test modules the workers will import."""
    global _config
    config = session.config
    workers = config.getoption("numprocesses", None)
    if (
        not config.pluginmanager.hasplugin("dsession")  # not a controller of workers
        or not isinstance(workers, int)
        or config.getoption("assertmode") != "rewrite"
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        return
    try:
        stale = [p for p in _test_modules(config) if rewrite._read_pyc(p, _pyc(p)) is None]
        if not stale:
            return
        _config = config
        processes = max(1, min(workers, os.cpu_count() or 1))
        with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork")) as pool:
            list(pool.map(_rewrite, stale, chunksize=4))
    except Exception:  # pytest's internals moved (a new pytest): the workers rewrite, as before
        return
