"""Counts on the server-made pages and notes read "1 job", "1 sequence", not "1 jobs"."""

from types import SimpleNamespace

from django.template.loader import render_to_string

from tierlab.dashboard.sweeps import batch_rule


def test_the_plan_page_says_one_candidate_in_one_job():
    plan = SimpleNamespace(pk=1, is_finished=False, created_at=None,
                           owner=SimpleNamespace(get_username=lambda: "x"))
    p = {"total_candidates": 1, "chunks": 1, "done": 0, "feasible": 0, "status": "queued"}
    html = " ".join(render_to_string("dashboard/_plan_body.html",
                                     {"p": p, "plan": plan, "percent": 0, "can_change": True}).split())
    assert "1 candidate in 1 job," in html and "0 of 1 candidate (0%)" in html
    p.update(total_candidates=6, chunks=2)
    html = " ".join(render_to_string("dashboard/_plan_body.html",
                                     {"p": p, "plan": plan, "percent": 0, "can_change": True}).split())
    assert "6 candidates in 2 jobs," in html


def test_the_sweep_batch_note_says_one_sequence():
    axes = [{"path": "training.micro_batch_size", "values": [1, 2]}]
    assert "stays at 1 sequence:" in batch_rule({"training": {"global_batch_size": 1}}, axes)
    axes = [{"path": "cluster.num_nodes", "values": [1, 2], "scales_global_batch": True}]
    note = batch_rule({"training": {"global_batch_size": 1}}, axes)
    assert "(1 sequence on 1 node)" in note
