"""make bench's runner: which sections run, each one timed, the report written as JSON and Markdown."""

import argparse
import json

import pytest

from rmlib import bench
from rmlib.errors import InputError


def _args(**kw):
    base = dict(only=None, full=False, skip_gcg=False, skip_search=False, skip_train=False, threads=None,
                quick=False, out=None, n_tokens=8, whole_tokens=8)
    return argparse.Namespace(**{**base, **kw})


def test_default_full_only_and_skip_choose_sections():
    default = [n for n, s in bench.SECTIONS.items() if s.default]
    assert bench.chosen_sections(_args()) == default
    assert "search_goal" not in default and "train_rm" not in default  # the long ones need --full
    cpu = [n for n, s in bench.SECTIONS.items() if not s.needs_gpu]  # --full on a CPU leaves out the GPU section
    assert bench.chosen_sections(_args(full=True)) == cpu and "gpu" not in cpu
    assert bench.chosen_sections(_args(full=True, skip_train=True)) == [n for n in cpu if n != "train_rm"]
    assert bench.chosen_sections(_args(only="gcg,startup")) == ["startup", "gcg"]  # registry order
    with pytest.raises(ValueError, match="unknown section"):
        bench.chosen_sections(_args(only="nope"))


def test_the_gpu_section_runs_only_where_asked_or_a_gpu_is_there(monkeypatch):
    monkeypatch.setattr(bench.torch.cuda, "is_available", lambda: True)
    assert "gpu" in bench.chosen_sections(_args(full=True))
    monkeypatch.setattr(bench.torch.cuda, "is_available", lambda: False)
    assert bench.chosen_sections(_args(only="gpu")) == ["gpu"]  # asked for: it runs, and says it needs a GPU
    from rmlib.bench.gpu import bench_gpu

    with pytest.raises(ValueError, match="needs a CUDA GPU"):
        bench_gpu()


def test_a_gpu_report_renders_its_summary_first():
    report = {"machine": {"gpu": "H100"}, "sections_s": {"gpu": 1.0},
              "summary": [{"shape": "gemma2-2b-rm", "wall_s": 13.2}, {"shape": "llama3.1-8b-rm", "wall_s": 9.6}],
              "gpu": {"measured_peak": {"bf16_tflops": 734.0}}}
    page = bench.markdown(report)
    assert page.startswith("# Benchmarks on a GPU")
    assert "| shape | wall_s |\n|---|---|\n| gemma2-2b-rm | 13.2 |\n| llama3.1-8b-rm | 9.6 |" in page
    assert page.index("| shape |") < page.index("| machine |")
    assert "| gpu.measured_peak.bf16_tflops | 734.0 |" not in page and "| measured_peak.bf16_tflops | 734.0 |" in page


def test_each_section_is_timed_and_the_report_written(tmp_path, monkeypatch, capsys):
    calls = []
    sections = {"one": bench.Section(lambda a: calls.append("one") or {"rate": 2.5, "per": {"x": 1}}),
                "two": bench.Section(lambda a: calls.append("two") or [{"a": 1}, {"a": 2}], default=False)}
    monkeypatch.setattr(bench, "SECTIONS", sections)
    out = tmp_path / "docs" / "benchmarks.json"
    assert bench.main(_args(out=str(out))) == 0
    printed = capsys.readouterr()
    assert calls == ["one"] and "bench: one took" in printed.err
    report = json.loads(out.read_text())
    assert json.loads(printed.out) == report
    assert set(report["sections_s"]) == {"one"} and report["sections_s"]["one"] >= 0
    assert report["machine"]["cpus"] >= 1 and report["machine"]["date_utc"][:2] == "20"
    md = out.with_suffix(".md").read_text()
    assert "| one |" in md or "[one]" in md
    assert "| per.x | 1 |" in md and "| rate | 2.5 |" in md and "python -m rmlib.book timings" in md
    assert bench.main(_args(out=str(out), full=True)) == 0
    assert "| [0].a | 1 |" in out.with_suffix(".md").read_text()


def test_startup_parts_are_timed_one_by_one_in_a_fresh_process(tmp_path, monkeypatch):
    """``rmlib score``'s steps, each timed in a fresh process on a model saved as a folder: every part
    took time, the scores file was written, and the whole vocabulary's token table was built then read;
    the first time the tokenizer is read (transformers imported), the second time neither (a warm start)."""
    from rmlib.bench import startup

    with startup.saved_folder("tiny:gemma2-classifier") as folder:
        monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path))
        first = startup.time_parts(folder, "10:40")
        timed = startup.time_parts(folder, "10:40")
    assert first["tokenizer_read"] and first["transformers_imported"]
    assert not timed["tokenizer_read"] and not timed["transformers_imported"]
    parts = timed["parts"]
    assert list(parts) == ["imports", "imports_model_stack", "weights", "tokenizer", "scoring", "token_table",
                           "writing"]
    assert all(v > 0 for v in parts.values())
    assert timed["forward"] == "lite" and timed["vocab_size"] == 49152  # a Gemma-2 folder runs rmlib's forward
    assert timed["whole_vocab_token_table_build_s"] > 0 and timed["whole_vocab_token_table_read_s"] > 0


def test_model_parts_runs_on_the_device_and_dtype_it_is_given(tmp_path, monkeypatch):
    """What a GPU run measures (``rmlib.bench.gpu_process``'s ``startup_parts``), here on the CPU in bfloat16,
    which ``rmlib score`` would not choose there: the whole processes and the parts both ran in that dtype,
    and the parts add up to their sum."""
    from rmlib.bench import startup

    monkeypatch.setenv("RMLIB_CACHE_DIR", str(tmp_path))
    with startup.saved_folder("tiny:gemma2-classifier") as folder:
        report = startup.model_parts(folder, "tiny", "10:40", runs=1, device="cpu", dtype="bfloat16")
    assert (report["device"], report["dtype"], report["forward"]) == ("cpu", "bfloat16", "lite")
    assert report["runs"] == 1 and len(report["whole_process_wall_s_all"]) == 1
    assert report["whole_process_wall_s_median"] >= report["first_score_s_median"] > 0
    assert abs(report["parts_sum_s"] - sum(report["parts_s"].values())) < 1e-6
    assert not report["tokenizer_read"]  # the warm-up run left the tokenizer's facts cached


def test_engine_vs_paper_times_the_published_path_on_whole_batches_of_the_same_tokens():
    """The published path runs the vocabulary in consecutive batches, so it scores the first whole batches
    of the engine's consecutive tokens (default a quarter, at least one batch): each rate is of its own
    count, the ratio is of the rates, and the score differences are taken on the tokens both scored."""
    row = bench.engine_vs_paper(n_tokens=24, repeats=1, paper_batch=8)
    assert row["n_tokens"] == 24 and row["paper_tokens"] == 8 and row["repeats"] == 1
    # the report rounds seconds to 3 decimals and computes the rates and their ratio from the unrounded
    # seconds: each must lie within what those roundings allow
    e, p, d = row["engine_s_median"], row["paper_s_median"], 5e-4
    assert 24 / (e + d) - 0.05 <= row["engine_tokens_per_s"] <= 24 / (e - d) + 0.05
    assert 8 / (p + d) - 0.05 <= row["paper_tokens_per_s"] <= 8 / (p - d) + 0.05
    assert 3 * (p - d) / (e + d) - 0.005 <= row["ratio"] <= 3 * (p + d) / (e - d) + 0.005
    assert row["max_abs_diff_paper_shared_prefix_vs_full"] < 1e-4  # the same published inputs either way
    assert bench.engine_vs_paper(n_tokens=4, repeats=1, paper_batch=8)["paper_tokens"] == 4  # never more
    with pytest.raises(InputError, match="paper_tokens must be between 1 and n_tokens"):
        bench.engine_vs_paper(n_tokens=4, paper_tokens=5)
