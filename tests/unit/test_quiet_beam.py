"""rt4chart owns its logging (issue 48, point 1): Beam's import-time notice ("apitools not
found ..." without the [gcp] extra) never reaches a terminal, a log or a host's handlers, and
no longer configures the root logger behind the command line's back, which had kept every
INFO progress line of a batch run out of its log (`rt4chart/_quiet_beam.py`).

The test venv has the [gcp] clients, so each case runs in a fresh interpreter where `apitools`
cannot be imported (`sys.modules["apitools"] = None`), as in the base install."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

WITHOUT_APITOOLS = "import sys; sys.modules['apitools'] = None\n"


def _python(code: str, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_APITOOLS + textwrap.dedent(code),
                           *args], capture_output=True, text=True, timeout=timeout)


def test_without_rt4chart_beam_does_print_its_notice_and_configure_the_root():
    # The premise of the other tests: in this interpreter Beam's import does warn.
    done = _python("""
        import logging, apache_beam
        print(len(logging.getLogger().handlers))
    """)
    assert "apitools not found" in done.stderr
    assert done.stdout.strip() == "1"


def test_importing_rt4chart_api_prints_nothing_and_leaves_the_root_logger_alone():
    done = _python("""
        import logging, json
        import rt4chart
        from rt4chart.pipeline import api  # imports Beam
        import apache_beam
        root = logging.getLogger()
        print(json.dumps([len(root.handlers), len(root.filters), root.level]))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout) == [0, 0, 30]


def test_a_hosts_logging_configuration_is_kept_and_gets_no_beam_notice():
    done = _python("""
        import logging, json
        seen = []
        class Keep(logging.Handler):
            def emit(self, record):
                seen.append(record.getMessage())
        host = Keep()
        logging.basicConfig(level=logging.DEBUG, handlers=[host])
        import rt4chart.pipeline.api
        root = logging.getLogger()
        print(json.dumps([root.handlers == [host], root.level, root.filters == [],
                          [m for m in seen if "apitools" in m]]))
    """)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True, 10, True, []]


def test_a_batch_run_writes_progress_lines_to_a_log(tmp_path):
    log = tmp_path / "stderr.log"
    with open(log, "w", encoding="utf-8") as err:  # not a terminal: plain log lines
        done = subprocess.run(
            [sys.executable, "-c", WITHOUT_APITOOLS + "from rt4chart.pipeline.launcher import "
             "main; sys.exit(main(sys.argv[1:]))", "audit", "--example", "--out",
             str(tmp_path / "out"), "--progress-every", "1"],
            stdout=subprocess.DEVNULL, stderr=err, timeout=900)
    text = log.read_text(encoding="utf-8")
    assert done.returncode == 0, text
    progress = [line for line in text.splitlines() if " progress: " in line]
    assert len(progress) >= 2, text
    assert "apitools" not in text
    assert "type hint will be ignored" not in text


def test_the_quiet_loader_keeps_beams_module_whole():
    done = _python("""
        import rt4chart.pipeline.api
        import apache_beam, importlib.resources
        print(apache_beam.__name__, hasattr(apache_beam, "Pipeline"),
              importlib.resources.files("apache_beam").is_dir())
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["apache_beam", "True", "True"]
