"""The vocabulary explorer: a prompt box, a model dropdown and the top and bottom tokens, live with a
kernel (ipywidgets), and a static version with a note on how to re-score for a page without one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from ..errors import InputError
from ..stats.vocab import top_bottom
from .chart_parts import check_n, require_columns
from .html import escape, escape_table


def _extremes(scores: pd.DataFrame, n: int) -> pd.DataFrame:
    """The top and bottom ``n`` rows (each row once, ties by ``token_id``), column ``end``."""
    ends = top_bottom(scores.reset_index(drop=True), n, tiebreak=["token_id"], disjoint=True)
    return ends.drop(columns="rank")


def _top_bottom_html(scores: pd.DataFrame, n: int) -> str:
    require_columns(scores, ("token_id", "decoded", "score"), "explorer scorer output")
    ends = _extremes(scores, n)
    cols = ["token_id", "decoded", "score"]
    top = escape_table(ends.loc[ends["end"] == "top", cols], caption=f"Top {n}")
    bottom = escape_table(ends.loc[ends["end"] == "bottom", cols].iloc[::-1], caption=f"Bottom {n}")
    return f'<div class="rmlib-explorer-tables" style="display:flex;gap:2em">{top}{bottom}</div>'


#: Environment variable naming the chapter a kernel runs (set by rmlib.book.run_chapter).
CHAPTER_ENV = "RMLIB_CHAPTER"


def static_explorer_note(prompt: str, chapter: str | None = None) -> str:
    """One escaped line for a page without a kernel: re-scoring needs one, and how to get one."""
    import os
    import shlex

    chapter = chapter if chapter is not None else os.environ.get(CHAPTER_ENV, "")
    if chapter.isdigit() and len(chapter) == 2:
        if any(c in prompt for c in "'\"$`\\!"):  # one quoting level only: the plain CLI
            command = f"python -m rmlib.book chapter {chapter} -p prompt {shlex.quote(prompt)}"
        else:  # make passes PARAMS to the shell: quote the prompt inside the quoted PARAMS
            command = f"make chapter CH={chapter} PARAMS=\"-p prompt '{prompt}'\""
        how = (f"re-run the chapter with your prompt (<code>{escape(command)}</code>) "
               f"or open <code>notebooks/{escape(chapter)}_*.ipynb</code> in Jupyter")
    else:
        how = "open this chapter's notebook in Jupyter, or re-run it with <code>make chapter CH=NN PARAMS=...</code>"
    return (f'<p class="rmlib-explorer-note">This page is static: scoring a new prompt or model needs a '
            f"running Python kernel; {how}.</p>")


def explorer(
    scorer_factory: Callable[[str], object], models: Sequence[str], default_prompt: str,
    *, n: int = 10, run_initial: bool = True,
):
    """An ipywidgets explorer: prompt box, model dropdown, button, top/bottom tables.

    ``scorer_factory(model)`` must return an object with
    ``score_tokens(prompt, token_ids=None) -> DataFrame[token_id, token, decoded, score]``;
    scorers are created once per model and cached. The tables go through
    :func:`rmlib.viz.html.escape_table`. With ``run_initial`` the default prompt
    is scored once at creation, so a static page shows a result. Returns the
    ``ipywidgets.VBox``; its ``.run()`` attribute re-scores (used in tests).

    Displayed, the box also offers a static ``text/html`` version: the current
    result under a one-line note saying that re-scoring needs a running kernel
    and how to get one (the chapter's ``make chapter`` command, chapter from
    ``RMLIB_CHAPTER``, which the book runner sets, or the notebook). A live
    Jupyter front end shows the widgets; the book keeps only the static version
    (:func:`rmlib.book.execute.prefer_static_widgets`), so a page never shows a
    control without a kernel and never loads the 1.9 MB widget bundle for it.
    """
    import ipywidgets as widgets

    if not callable(scorer_factory):
        raise TypeError("scorer_factory must be callable: model name -> scorer")
    models = [str(m) for m in models]
    if not models:
        raise InputError("explorer needs at least one model")
    if not isinstance(default_prompt, str) or not default_prompt.strip():
        raise InputError("default_prompt must be a non-empty string")
    n = check_n(n)
    cache: dict[str, object] = {}
    prompt_box = widgets.Text(value=default_prompt, description="Prompt", layout=widgets.Layout(width="60%"))
    model_box = widgets.Dropdown(options=models, value=models[0], description="Model")
    button = widgets.Button(description="Score", button_style="primary")
    result = widgets.HTML(value="<em>Press Score to score the vocabulary.</em>")

    def run(_=None) -> None:
        prompt = prompt_box.value
        if not prompt.strip():
            result.value = "<strong>Enter a prompt first.</strong>"
            return
        model = model_box.value
        result.value = f"<em>Scoring with {escape(model)}…</em>"
        try:
            if model not in cache:
                cache[model] = scorer_factory(model)
            scores = cache[model].score_tokens(prompt)
            result.value = (
                f"<p>{escape(model)} — prompt: <q>{escape(prompt)}</q></p>"
                + _top_bottom_html(scores, n)
            )
        except Exception as err:  # shown to the reader, escaped
            result.value = f"<strong>Error:</strong> {escape(f'{type(err).__name__}: {err}')}"

    button.on_click(run)
    box = widgets.VBox([widgets.HBox([prompt_box, model_box, button]), result])
    box.add_class("rmlib-explorer")
    box.run = run

    def mimebundle(**kwargs):
        data = dict(widgets.VBox._repr_mimebundle_(box, **kwargs) or {})
        example = prompt_box.value if prompt_box.value.strip() else default_prompt
        data["text/html"] = (f'<div class="rmlib-explorer-static">{static_explorer_note(example)}'
                             f"{result.value}</div>")
        return data

    box._repr_mimebundle_ = mimebundle
    if run_initial:
        run()
    return box
