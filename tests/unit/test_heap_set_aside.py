"""A command-line run keeps the objects that exist before it out of the cyclic collector while
it runs (pipeline/run/jobs.py `_heap_set_aside`, entered by the command line only:
`cli_process_tuning`), and gives them back after, whether it ends or fails."""

from __future__ import annotations

import gc

import pytest

from rt4chart.pipeline.run import jobs


class Planted(Exception):
    pass


def test_objects_made_before_are_set_aside_and_given_back():
    before = gc.get_freeze_count()
    kept = [[i] for i in range(1000)]  # tracked containers, made before
    with jobs._heap_set_aside():
        assert gc.get_freeze_count() >= before + len(kept)
    assert gc.get_freeze_count() == before


def test_a_failing_run_gives_the_heap_back_too():
    before = gc.get_freeze_count()
    with pytest.raises(Planted), jobs._heap_set_aside():
        assert gc.get_freeze_count() > before
        raise Planted
    assert gc.get_freeze_count() == before


def test_the_library_audit_leaves_the_heap_to_its_host(monkeypatch):
    """The heap is set aside by the command line only (cli_process_tuning), never by the
    library's run (jobs._run_pipelines, which rt4chart.audit reaches too)."""
    seen = []

    def audit_runs(*_args):
        seen.append(gc.get_freeze_count())
        raise Planted
        yield  # a generator, as the real one

    monkeypatch.setattr(jobs, "audit_runs", audit_runs)
    before = gc.get_freeze_count()
    with pytest.raises(Planted):
        jobs._run_pipelines(None, None, None, 1.0)
    assert seen == [before]
    assert gc.get_freeze_count() == before


def test_the_command_line_sets_the_heap_aside_and_gives_it_back():
    before = gc.get_freeze_count()
    with jobs.cli_process_tuning():
        assert gc.get_freeze_count() > before
    assert gc.get_freeze_count() == before


def test_a_process_that_freezes_its_own_objects_keeps_them_frozen():
    assert gc.get_freeze_count() == 0
    gc.freeze()  # the host's own policy (a pre-fork server)
    try:
        theirs = gc.get_freeze_count()
        with jobs._heap_set_aside():
            assert gc.get_freeze_count() == theirs
        assert gc.get_freeze_count() == theirs  # not given back by the run
    finally:
        gc.unfreeze()
