"""Chat frames: the prompt's chat template around the response, as verified token ids.

The model input is built from token ids: the model's own chat template is
rendered around a sentinel, split into prefix ids and suffix ids, and each
candidate's ids are put between them. A token is never decoded and
re-tokenized. The split is verified (sentinel rendered once, no sentinel
leaking into prefix or suffix, no duplicated BOS, the pieces re-assemble the
template's own tokenization) and fails loudly otherwise.
"""

from __future__ import annotations

import dataclasses

from ..errors import InputError
from ..options import check_chat_template

SENTINEL = "RMLIBSENTINEL"

# Named templates for tokenizers that have none (pass chat_template=NAME; a registry entry's template names one).
TEMPLATES = {
    "chatml": (
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] "
        "+ '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
    ),
    "llama3": (
        "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
        "'<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
    ),
    # The paper's format for pretrained (base) models, "User: {prompt}\nAssistant:". The
    # response follows the colon directly: its tokens carry their own leading space
    # (" Love"), as the model's next token after "Assistant:" does.
    "plain": (
        "{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' + message['content'] + '\n' }}"
        "{% else %}{{ 'Assistant:' + message['content'] }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
    ),
    # Gemma's form (the turn markers, the message trimmed): the tiny Gemma-2 test model and the Gemma-2-shaped
    # benchmark models (rmlib.engine.shapes) use it; real Gemma tokenizers carry their own.
    "gemma": (
        "{{ bos_token }}{% for message in messages %}"
        "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
        "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
    ),
}

class TemplateSplitError(InputError):
    """The chat template cannot be split into prefix and suffix ids exactly."""


@dataclasses.dataclass(frozen=True)
class ChatFrame:
    """The prompt's chat template around the response, as token ids."""

    prompt: str
    chat_template: str
    prefix_text: str
    suffix_text: str
    prefix_ids: tuple[int, ...]
    suffix_ids: tuple[int, ...]


def resolve_template(tokenizer, chat_template: str | None, what: str) -> str:
    """The Jinja template to use: ``chat_template`` (a name in :data:`TEMPLATES` or the
    template itself), else the tokenizer's own; an error naming ``what`` when there is none."""
    return choose_template(chat_template, getattr(tokenizer, "chat_template", None) if chat_template is None else None,
                           what)


def choose_template(chat_template: str | None, own: str | None, what: str) -> str:
    """:func:`resolve_template` given the tokenizer's own template ``own`` (as a tokenizer's facts record it)."""
    if chat_template is not None:
        return TEMPLATES.get(check_chat_template(chat_template), chat_template)
    if own:
        return own
    raise InputError(
        f"the tokenizer of {what} has no chat template: pass chat_template= a Jinja template string or "
        f"one of {sorted(TEMPLATES)} (CLI: --chat-template); rmlib never guesses one"
    )


def ending_at_turn_end(template: str) -> str:
    """``template`` with a conversation that ends on the assistant's turn ending at its end-of-turn
    token: the one newline the template writes after that token (``<|im_end|>``, ``<end_of_turn>``)
    is dropped, so a reward read at the last token is read at the end-of-turn token itself, as
    reward models whose turn ends with ``<|eot_id|>`` (Llama 3) read theirs.

    Rendering is otherwise unchanged: a prompt prefix (``add_generation_prompt``), a conversation
    ending with a user turn, and a template whose text does not end with a newline render exactly
    as ``template`` does. Rmlib's trained reward models carry this template (one token less per
    scored response; the speed-up: ``make bench --only train_rm``).
    """
    return ("{% set rendered %}" + template + "{% endset %}"
            "{% if not add_generation_prompt and messages and messages[-1]['role'] == 'assistant' "
            "and rendered.endswith('\\n') %}{{ rendered[:-1] }}{% else %}{{ rendered }}{% endif %}")


def render(tokenizer, messages, template: str, **kw) -> str:
    """``apply_chat_template`` as text; a template that does not render is an ``InputError``."""
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, chat_template=template, **kw)
    except Exception as err:  # jinja2 TemplateSyntaxError / UndefinedError / TypeError from a filter
        if isinstance(err, InputError):
            raise
        raise InputError(
            f"the chat template does not render ({type(err).__name__}: {err}); pass a valid Jinja template "
            f"or one of {sorted(TEMPLATES)} (CLI: --chat-template)"
        ) from err


def special_texts(tokenizer) -> list[str]:
    """Every special token's text (``<|im_end|>``, BOS, added control tokens), sorted."""
    specials = set(getattr(tokenizer, "all_special_tokens", []) or [])
    for tok in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values():
        if getattr(tok, "special", False):
            specials.add(str(tok))
    return sorted(t for t in specials if t)


def special_token_texts(tokenizer, prompt: str, specials: list[str] | None = None) -> list[str]:
    """The special tokens' texts (``<|im_end|>``, BOS, added control tokens) found in ``prompt``
    (``specials``: the tokenizer's :func:`special_texts`, when known without it)."""
    return [t for t in (special_texts(tokenizer) if specials is None else specials) if t in prompt]


def check_prompt_text(tokenizer, prompt: str, specials: list[str] | None = None) -> None:
    """Token mode: the prompt is user content, so its special-token text may not become control tokens."""
    found = special_token_texts(tokenizer, prompt, specials)
    if found:
        raise InputError(
            f"the prompt contains the special-token text {found[:5]}: in token mode the prompt is the user's "
            "message and may not open or close chat turns; remove that text from the prompt (mode='paper' "
            "keeps the published behaviour, parsing it as control tokens, and records that in provenance)"
        )


def _adds_bos(tokenizer) -> bool:
    bos = tokenizer.bos_token_id
    if bos is None:
        return False
    ids = tokenizer("a").input_ids
    return bool(ids) and ids[0] == bos and tokenizer("a", add_special_tokens=False).input_ids[:1] != [bos]


def chat_frame(tokenizer, prompt: str, chat_template: str | None = None, what: str = "this model") -> ChatFrame:
    """Render the template around a sentinel and split it into prefix/suffix ids (verified)."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError("prompt must be a non-empty string")
    if SENTINEL in prompt:
        raise InputError(f"the prompt may not contain the reserved string {SENTINEL!r}")
    template = resolve_template(tokenizer, chat_template, what)
    messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": SENTINEL}]
    text = render(tokenizer, messages, template)
    if text.count(SENTINEL) != 1:
        raise TemplateSplitError(
            f"the chat template renders the assistant message {text.count(SENTINEL)} times, not once; "
            "pass a chat_template that renders each message once"
        )
    prefix_text, suffix_text = text.split(SENTINEL)

    def ids(s):
        return list(tokenizer(s, add_special_tokens=False).input_ids) if s else []

    prefix, sentinel, suffix = ids(prefix_text), ids(SENTINEL), ids(suffix_text)
    # The pieces must re-assemble the template's own tokenization, for the sentinel and for a
    # real word (a tokenizer can merge a word with the text after it: 'hello' + 'ing').
    probe = "hello"
    probe_text = render(tokenizer, [messages[0], {"role": "assistant", "content": probe}], template)
    if ids(text) != prefix + sentinel + suffix or ids(probe_text) != ids(prefix_text) + ids(probe) + suffix:
        raise TemplateSplitError(
            "the chat template does not split cleanly at the response: tokenizing the whole rendered "
            "conversation gives different ids than prefix + response + suffix (the tokenizer merges across "
            f"the boundary). prefix ends {prefix_text[-20:]!r}, suffix starts {suffix_text[:20]!r}. Pass a "
            "chat_template whose response is delimited by special tokens or newlines"
        )
    bos = tokenizer.bos_token_id
    if _adds_bos(tokenizer) and prefix[:1] != [bos]:
        prefix = [bos] + prefix  # the model was trained with BOS first; the template lacks it
    if bos is not None and prefix[:2] == [bos, bos]:
        raise TemplateSplitError("the template renders BOS twice; pass a chat_template without the extra BOS")
    for name, part in (("prefix", prefix), ("suffix", suffix)):
        if SENTINEL in tokenizer.decode(part):
            raise TemplateSplitError(f"the sentinel leaked into the {name}; the template is not splittable")
    return ChatFrame(prompt, template, prefix_text, suffix_text, tuple(prefix), tuple(suffix))


