"""Text <-> tokens for workflows: prompts (optionally in the chat template) and observations.

Two formats, as SkyRL's generator has them (skyrl/train/generators/skyrl_gym_generator.py):

- chat template (``task.chat_template: true`` and the tokenizer has one; SkyRL's
  ``use_conversation_multi_turn=true``): a prompt is the template applied to its messages with
  the generation prompt; an observation is the template's rendering of the new messages plus the
  next generation prompt, taken as the difference to a fixed base conversation (SkyRL's
  "fixed base" tokenization), so earlier tokens are never re-tokenized (token in, token out);
- raw text (``chat_template: false``): the messages' contents, encoded directly, no template.

SkyRL's ``use_conversation_multi_turn=false`` (``conversation=False``) keeps the templated first prompt
but encodes observations as raw text, continuing the one assistant message (skyrl_gym_generator.py
``get_obs_ids_from_obs``).
"""

from __future__ import annotations

from typing import Any

Messages = list[dict[str, str]]

# SkyRL's base conversation for the fixed-base observation tokenization.
_BASE = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "I am a user."}]


class ChatFormat:
    """Tokenizes prompts and observations for one tokenizer and one format."""

    def __init__(
        self,
        tokenizer: Any,
        chat_template: bool,
        template_kwargs: dict[str, Any] | None = None,
        conversation: bool = True,
    ) -> None:
        self.tokenizer = tokenizer
        # SkyRL's generator.chat_template_kwargs (e.g. gpt-oss's reasoning_effort), given to every rendering
        self.template_kwargs = dict(template_kwargs or {})
        self.templated = bool(chat_template and getattr(tokenizer, "chat_template", None))
        self.conversation = conversation  # SkyRL's use_conversation_multi_turn: observations as chat messages
        self._cache: dict[str, list[int]] = {}
        self._base_ids: list[int] = []
        if self.templated:
            base = self._template(_BASE, generation_prompt=False)
            eos = tokenizer.eos_token_id
            if eos in base:  # end the base at its last end-of-turn: the observation starts after it
                base = base[: len(base) - base[::-1].index(eos)]
            self._base_ids = base

    def _template(self, messages: Messages, generation_prompt: bool) -> list[int]:
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation_prompt, **self.template_kwargs
        )
        return self.encode(text)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def prompt_text(self, prompt: str | Messages) -> str:
        """The first prompt as the text its tokens encode (the template applied, or the contents joined)."""
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        if self.templated:
            return self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True, **self.template_kwargs
            )
        return "\n".join(m["content"] for m in messages)

    def prompt_texts(self, prompts: list[str | Messages]) -> list[str]:
        """``prompt_text`` of each prompt, the template rendered for all in one call (less overhead per row)."""
        if not self.templated or not prompts:
            return [self.prompt_text(p) for p in prompts]
        batch = [[{"role": "user", "content": p}] if isinstance(p, str) else list(p) for p in prompts]
        rendered = self.tokenizer.apply_chat_template(
            batch, tokenize=False, add_generation_prompt=True, **self.template_kwargs
        )
        return list(rendered)

    def prompt_ids(self, prompt: str | Messages) -> list[int]:
        """The first prompt's tokens (cached by content)."""
        key = repr(prompt)
        if key not in self._cache:
            self._cache[key] = self.encode(self.prompt_text(prompt))
        return self._cache[key]

    def observation_ids(self, messages: Messages, done: bool) -> list[int]:
        """Tokens of an environment's observation messages (and the next turn's generation prompt)."""
        if not messages:
            return []
        if self.templated and self.conversation:
            return self._template([*_BASE, *messages], generation_prompt=not done)[len(self._base_ids) :]
        return [t for m in messages for t in self.encode(m["content"])]

    @property
    def eos_id(self) -> int | None:
        """The tokenizer's end-of-sequence id (what SkyRL's generator appends or drops)."""
        eos = self.tokenizer.eos_token_id
        return None if eos is None else int(eos)


def stop_token_ids(tokenizer: Any) -> list[int]:
    """End-of-turn ids: the tokenizer's eos plus Qwen-style <|im_end|> / <|endoftext|> if present."""
    ids = []
    if tokenizer.eos_token_id is not None:
        ids.append(int(tokenizer.eos_token_id))
    vocab = tokenizer.get_vocab()
    for tok in ("<|im_end|>", "<|endoftext|>"):
        if tok in vocab and vocab[tok] not in ids:
            ids.append(int(vocab[tok]))
    return ids


__all__ = ["ChatFormat", "Messages", "stop_token_ids"]
