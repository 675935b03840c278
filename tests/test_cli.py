"""rmlib.cli: option choices come from the library's constants (rmlib.options)."""

import pytest

from rmlib import cli
from rmlib import options as choices
from rmlib.engine import frames, models


def _help(capsys, *argv):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--help"])
    assert exit_.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_score_help_lists_the_library_choices(capsys):
    text = _help(capsys, "score")
    assert "--mode {" + ",".join(choices.MODES) + "}" in text
    assert "--kind {" + ",".join(choices.MODEL_KINDS) + "}" in text
    assert "--dtype {" + ",".join(choices.DTYPE_NAMES) + "}" in text
    assert "--paper-forward {" + ",".join(choices.PAPER_FORWARDS) + "}" in text
    assert ", ".join(frames.TEMPLATES) in text


def test_choices_are_what_the_engine_accepts():
    assert tuple(models.DTYPES) == choices.DTYPE_NAMES and models.MODEL_KINDS == choices.MODEL_KINDS
    assert choices.TEMPLATE_NAMES == tuple(frames.TEMPLATES)
    for mode in choices.MODES:
        assert choices.check_mode(mode) == mode
    with pytest.raises(ValueError, match="'token'.*'paper'"):
        choices.check_mode("fast")


def test_a_choice_outside_the_library_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["score", "--prompt", "hi", "--dtype", "float64"])
    assert exit_.value.code == 2
    assert "invalid choice: 'float64'" in capsys.readouterr().err


def test_import_paper_csv_writes_into_the_resolved_score_folder(tmp_path, monkeypatch, capsys):
    import pandas as pd

    from rmlib.tables.store import load_scores

    raw = pd.DataFrame({"token_id": [1, 0], "token_name": ["a", "b"], "token_decoded": ["a", "b"],
                        "greatest": [0.5, -1.0], "best": [1.0, 2.0], "worst": [-3.0, 0.0]})
    csv = tmp_path / "m.csv"
    raw.to_csv(csv, index=False)
    monkeypatch.setenv("RMLIB_SCORES_DIR", str(tmp_path / "scores"))
    assert cli.main(["import-paper-csv", str(csv), "--model", "org/m"]) == 0
    written = sorted((tmp_path / "scores" / "imported").glob("*.parquet"))
    assert [p.name.rsplit("__", 1)[1] for p in written] == ["best.parquet", "greatest.parquet", "worst.parquet"]
    back = load_scores(written[0])
    assert back["token_id"].tolist() == [0, 1] and back["score"].tolist() == [2.0, 1.0]
    assert back.attrs["provenance"]["model_id"] == "org/m"
    assert str(written[0]) in capsys.readouterr().out


def test_score_paper_forward_full_and_shared_prefix_write_the_same_scores(tmp_path, capsys):
    """`rmlib score --mode paper`: both forwards write a table (read back here) with the same scores,
    each recording how it ran."""
    import numpy as np

    from rmlib.tables.store import load_scores

    tables = {}
    for forward in choices.PAPER_FORWARDS:
        out = tmp_path / f"{forward}.parquet"
        rc = cli.main(["score", "--model", "tiny:gemma2-classifier", "--prompt", "What is best?", "--tokens", "0:48",
                       "--mode", "paper", "--paper-forward", forward, "--no-progress", "--batch-size", "16",
                       "--cache-dir", str(tmp_path / forward), "--out", str(out)])
        assert rc == 0, capsys.readouterr()
        tables[forward] = load_scores(out)
        assert tables[forward].attrs["provenance"]["paper_forward"] == forward
    np.testing.assert_allclose(tables["shared-prefix"]["score"], tables["full"]["score"], atol=1e-5, rtol=0)


def test_a_stray_exception_is_an_internal_error_not_bad_input(monkeypatch, capsys):
    """Only rmlib's own errors read as the user's fault (exit 2 for bad input); anything else is a bug:
    one line asking for a report (exit 1), the traceback under --debug."""
    import pytest

    from rmlib import cli
    from rmlib.errors import InputError

    def broken(args):
        raise KeyError("column 'x'")

    def bad_input(args):
        raise InputError("--length must be >= 1: give a whole number of tokens")

    assert cli.run_guarded(broken, None, "rmlib score") == 1
    err = capsys.readouterr().err
    assert err.startswith("rmlib score: internal error, please report it") and "KeyError" in err and "--debug" in err
    assert cli.run_guarded(bad_input, None, "rmlib score") == 2
    assert capsys.readouterr().err.strip() == "rmlib score: --length must be >= 1: give a whole number of tokens"
    assert cli.run_guarded(lambda a: int("x"), None, "rmlib score") == 1  # a ValueError from below rmlib: a bug
    assert "internal error" in capsys.readouterr().err
    with pytest.raises(KeyError):
        cli.run_guarded(broken, None, "rmlib score", debug=True)


def _names(text: str, before: str, after: str) -> list[str]:
    return text.split(before, 1)[1].split(after, 1)[0].split(", ")


def test_bench_help_lists_every_section_of_the_bench(capsys):
    """--only names every section and --full every one outside the default run, as the bench runs them."""
    from rmlib import bench

    text = _help(capsys, "bench")
    assert _names(text, "run only these sections: ", " --threads") == list(bench.SECTIONS)
    long_ones = _names(text, "also the long sections (", ")") + _names(text, "the GPU ones (", ")")
    assert long_ones == [name for name, section in bench.SECTIONS.items() if not section.default]
    assert _names(text, "the GPU ones (", ")") == [name for name, s in bench.SECTIONS.items() if s.needs_gpu]


def _exit_and_err(capsys, argv) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    return exit_.value.code, capsys.readouterr().err


def test_an_argument_error_is_one_line_naming_the_option_and_the_help(capsys):
    """argparse's usage block is left out: one line says what is wrong and where the help is."""
    code, err = _exit_and_err(capsys, ["score", "--prompt", "hi", "--batch-size", "0"])
    assert code == 2
    assert err == ("rmlib score: error: argument --batch-size: must be a positive whole number (1 or more), got 0 "
                   "(see rmlib score --help)\n")
    code, err = _exit_and_err(capsys, ["frobnicate"])
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("rmlib: error: argument command: invalid choice: 'frobnicate'") and "(see rmlib --help)" in err
    code, err = _exit_and_err(capsys, ["search", "--prompt", "hi", "--length", "2"])
    assert code == 2 and err.count("\n") == 1 and "required: --direction" in err and "usage" not in err


def test_help_still_shows_the_usage_block(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["score", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and out.startswith("usage: rmlib score [-h]") and "--batch-size BATCH_SIZE" in out


def test_the_book_command_lines_errors_are_one_line_too(capsys):
    from rmlib.book.__main__ import main as book_main

    for argv, prog in ((["all", "--nope"], "python -m rmlib.book all"),
                       (["chapter", "01", "--nope"], "python -m rmlib.book chapter")):
        with pytest.raises(SystemExit) as exit_:
            book_main(argv)
        assert exit_.value.code == 2
        assert capsys.readouterr().err == f"{prog}: error: unrecognized arguments: --nope (see {prog} --help)\n"


@pytest.mark.parametrize("where", ["before", "after", "none"])
def test_debug_counts_before_or_after_the_command(where, capsys):
    """``rmlib --debug score ...`` and ``rmlib score ... --debug`` both show the traceback."""
    argv = ["score", "--model", "tiny:llama-classifier", "--prompt", "hi", "--revision", "x"]
    argv = {"before": ["--debug", *argv], "after": [*argv, "--debug"], "none": argv}[where]
    assert cli.build_parser().parse_args(argv).debug is (where != "none")
    if where == "none":
        assert cli.main(argv) == 2
        assert capsys.readouterr().err.startswith("rmlib score: revision 'x' means something only for a hub model")
    else:
        from rmlib.errors import InputError

        with pytest.raises(InputError, match="revision 'x'"):
            cli.main(argv)


@pytest.fixture
def no_model_loads(monkeypatch):
    """Loading or training a model fails the test: the checks under test come before either."""
    import rmlib.engine.scorers as scorers_mod
    import rmlib.training.trained as trained_mod

    def loaded(*args, **kwargs):
        raise AssertionError(f"a model was loaded or trained: {args}")

    monkeypatch.setattr(scorers_mod, "load_model", loaded)
    monkeypatch.setattr(trained_mod, "ensure_trained", loaded)


@pytest.mark.parametrize("model", ["tiny:llama-classifier", "trained:default"])
def test_a_misspelt_reference_is_refused_before_any_model_loads_or_trains(model, no_model_loads, capsys):
    argv = ["score", "--model", model, "--prompt", "hi", "--tokens", "0:5", "--reference", "tiny:llama-lmm",
            "--no-progress"]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == ("rmlib score: --reference: unknown tiny model 'tiny:llama-lmm'; choose one of "
                                       "tiny:llama-classifier, tiny:gemma2-classifier, tiny:llama-lm\n")


def test_the_library_refuses_a_misspelt_reference_before_loading_the_model(no_model_loads):
    from rmlib.engine.scorers import load_scorer
    from rmlib.errors import InputError

    with pytest.raises(InputError, match="unknown tiny model 'tiny:llama-lmm'"):
        load_scorer("tiny:llama-classifier", reference="tiny:llama-lmm")


@pytest.mark.parametrize("command", ["score", "train-rm"])
def test_a_misspelt_chat_template_name_is_refused_at_argument_time(command, no_model_loads, capsys):
    argv = {"score": ["score", "--model", "tiny:llama-classifier", "--prompt", "hi", "--tokens", "0:5"],
            "train-rm": ["train-rm", "--max-items", "40"]}[command]
    code, err = _exit_and_err(capsys, [*argv, "--chat-template", "chatmll"])
    assert code == 2
    assert err == (f"rmlib {command}: error: argument --chat-template: 'chatmll' is neither a built-in template "
                   "(chatml, llama3, plain, gemma) nor a Jinja template (it has no '{{' or '{%'): did you mean "
                   f"'chatml'? (see rmlib {command} --help)\n")
    code, err = _exit_and_err(capsys, [*argv, "--chat-template", "my template"])
    assert code == 2 and "give one of those names, or a Jinja template" in err and "did you mean" not in err


def test_the_library_refuses_a_misspelt_chat_template_before_loading(no_model_loads):
    from rmlib.engine.frames import TEMPLATES, choose_template
    from rmlib.engine.scorers import load_scorer
    from rmlib.errors import InputError
    from rmlib.training.configuration import TrainConfig

    with pytest.raises(InputError, match=r"chat_template 'lama3' is neither a built-in.*did you mean 'llama3'\?"):
        load_scorer("tiny:llama-classifier", chat_template="lama3")
    with pytest.raises(InputError, match=r"chat_template 'Plain' .*did you mean 'plain'\?"):
        choose_template("Plain", None, "tiny:llama-classifier")
    with pytest.raises(InputError, match=r"chat_template 'chatmll' .*did you mean 'chatml'\?"):
        TrainConfig(chat_template="chatmll").validate()
    assert choose_template("plain", None, "m") == TEMPLATES["plain"]
    assert choose_template("{{ messages[0]['content'] }}", None, "m") == "{{ messages[0]['content'] }}"


def test_a_kind_the_model_is_not_says_what_to_give_before_it_loads(monkeypatch, capsys):
    import rmlib.engine.models as models_mod

    def built(*args, **kwargs):
        raise AssertionError("the model was built")

    monkeypatch.setattr(models_mod, "tiny_model", built)
    argv = ["score", "--model", "tiny:llama-classifier", "--prompt", "hi", "--tokens", "0:5", "--no-progress",
            "--kind", "logprob"]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == ("rmlib score: 'tiny:llama-classifier' is a classifier model, not logprob: "
                                       "leave --kind out (the kind is read from the model) or give --kind classifier "
                                       "(in Python: kind=None or kind='classifier')\n")


def test_a_cache_dir_that_is_a_file_is_refused_before_any_work(tmp_path, no_model_loads, capsys):
    table = tmp_path / "some.parquet"
    table.write_bytes(b"not mine to touch")
    argv = ["score", "--model", "tiny:llama-classifier", "--prompt", "hi", "--tokens", "0:5", "--no-progress"]
    assert cli.main([*argv, "--cache-dir", str(table)]) == 2
    assert capsys.readouterr().err == (f"rmlib score: --cache-dir {table} is a file, not a folder: give a folder (it "
                                       "is created if missing)\n")
    assert cli.main([*argv, "--cache-dir", str(table / "scores")]) == 2
    assert capsys.readouterr().err == (f"rmlib score: --cache-dir {table / 'scores'} cannot be created: {table} is a "
                                       "file, not a folder; give a folder (it is created if missing)\n")
    assert table.read_bytes() == b"not mine to touch"


@pytest.mark.parametrize("value, fix", [
    ("nonsense", "give one of those, or leave it out (one device: --device)"),
    ("Auto", "did you mean 'auto'?"),
    ("cuda:0", "for one device, leave --device-map out and give --device cuda:0"),
])
def test_a_device_map_transformers_cannot_use_is_refused_at_argument_time(value, fix, no_model_loads, capsys):
    code, err = _exit_and_err(capsys, ["score", "--model", "tiny:llama-classifier", "--prompt", "hi", "--tokens",
                                       "0:5", "--device-map", value])
    assert code == 2
    assert err == (f"rmlib score: error: argument --device-map: {value!r} is not one of auto, balanced, "
                   f"balanced_low_0, sequential (the ways to spread a model over the GPUs): {fix} "
                   "(see rmlib score --help)\n")


def test_every_accepted_device_map_parses_and_the_library_refuses_others(no_model_loads):
    from rmlib.engine.models import load_model
    from rmlib.errors import InputError

    for value in choices.DEVICE_MAPS:
        args = cli.build_parser().parse_args(["score", "--prompt", "hi", "--device-map", value])
        assert args.device_map == value
    with pytest.raises(InputError, match=r"device_map 'nonsense' is not one of auto, balanced"):
        load_model("tiny:llama-classifier", device_map="nonsense")


SEARCH = ["search", "--model", "tiny:llama-classifier", "--prompt", "hi", "--length", "2", "--direction", "max",
          "--method", "sweep", "--restarts", "1", "--no-progress"]


@pytest.mark.parametrize("extra, message", [
    (["--budget-seconds", "-5"], "--budget-seconds must be a positive number of seconds, got -5 (or leave it out: "
                                 "the search then makes --restarts starts)"),
    (["--budget-seconds", "0"], "--budget-seconds must be a positive number of seconds, got 0 (or leave it out: "
                                "the search then makes --restarts starts)"),
    (["--start", ""], "--start is empty: give the starting text of the search (--length tokens of it), or leave "
                      "--start out"),
    (["--restarts", "0"], "--restarts must be a whole number >= 1, got 0"),
])
def test_search_errors_use_the_command_lines_words_before_any_model_loads(extra, message, no_model_loads, capsys):
    assert cli.main([*SEARCH, *extra]) == 2
    err = capsys.readouterr().err
    assert err == f"rmlib search: {message}\n"
    assert "None" not in err and " int " not in err


def test_a_search_start_of_the_wrong_length_names_both_options(capsys):
    assert cli.main([*SEARCH, "--start", "hello there friend"]) == 2
    assert capsys.readouterr().err == ("rmlib search: --start 'hello there friend' is 3 tokens of "
                                       "tiny:llama-classifier but --length is 2: give a --start of exactly 2 tokens, "
                                       "or leave --start out\n")


def test_a_quoted_error_is_cut_at_a_words_end():
    from rmlib.errors import shortened

    assert shortened("short\n text") == "short text"
    text = "no matching entry was found in the local cache"
    assert shortened(text, 44) == "no matching entry was found in the local …"
    assert shortened("x" * 50, 10) == "x" * 10 + " …"  # one long word: cut where it must be


def test_an_unreachable_hub_id_says_it_may_be_misspelt_and_is_not_cut_mid_word():
    from rmlib.engine.hub import hub_error

    inner = ("Cannot resolve revision 'main' for model 'Qwen/Qwen2.5-0.5B-Instrct': the Hub could not be reached "
             "(ConnectError: [Errno -2] Name or service not known) and no matching entry was found in the local "
             "cache. " + "More detail follows here. " * 20)
    text = str(hub_error("Qwen/Qwen2.5-0.5B-Instrct", None, OSError(inner)))
    quoted = text.split("(OSError: ", 1)[1].split(" …). ", 1)[0]
    assert inner.startswith(quoted) and inner[len(quoted)] == " "  # whole words only
    assert "found in the local cache." in quoted
    assert ("The id may be misspelt: check it on the Hub (https://huggingface.co/Qwen/Qwen2.5-0.5B-Instrct). "
            "Without a network, download it elsewhere") in text
