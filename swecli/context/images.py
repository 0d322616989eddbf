"""Old images become one-line stand-ins, at planned rewrite points only.

An image costs hundreds to thousands of prompt tokens on every request that carries it. Once it is
older than `keep_turns` user turns (it came with, or during, a turn before the last `keep_turns`
prompts), it is *eligible* to be replaced by its stand-in: what it was, where it came from and its
path, so the model can read it again with read_file.

Eligible is not replaced at once: changing an old message breaks the prompt cache from that message
on, so the replacement happens only where the history is rewritten anyway, or where a rewrite pays:

- at every compaction and every decay batch (the prefix is rewritten then: the stand-ins ride along);
- on its own, at the start of a user turn (the only moment the eligible set changes), when the
  eligible images add up to at least `batch_min_tokens`: one rewrite then saves their tokens on every
  later request.

Between those points an eligible image stays, byte for byte, in the cached prefix (at a cache read
it costs a tenth of its tokens).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from swecli.messages import ImagePart, Message, ToolMessage, UserMessage
from swecli.records import datarecord

ImageCost = Callable[[int, int], int]


@datarecord(frozen=True)
class ImageAging:
    """The history after old images were replaced by references, and what it saved."""

    history: list[Message]
    """The input object itself when nothing was replaced."""
    replaced: int
    saved_tokens: int


def keep_from(history: Sequence[Message], keep_turns: int) -> int:
    """Index where the last `keep_turns` user turns begin (images from there on stay)."""
    seen = 0
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if isinstance(message, UserMessage) and message.kind == "prompt":
            seen += 1
            if seen >= keep_turns:
                return index
    return 0


def images_of(message: Message) -> tuple[ImagePart, ...]:
    return message.images if isinstance(message, UserMessage | ToolMessage) else ()


def eligible(history: Sequence[Message], keep_turns: int) -> list[int]:
    """Indices of messages older than `keep_turns` user turns that still carry images."""
    return [i for i in range(keep_from(history, keep_turns)) if images_of(history[i])]


def pending_tokens(history: Sequence[Message], keep_turns: int, cost: ImageCost) -> int:
    """What replacing the eligible images would save per request."""
    return sum(cost(image.width, image.height)
               for i in eligible(history, keep_turns) for image in images_of(history[i]))


def age_images(history: list[Message], keep_turns: int, cost: ImageCost) -> ImageAging:
    """Every eligible image replaced by its stand-in (appended to its message's text)."""
    indices = eligible(history, keep_turns)
    if not indices:
        return ImageAging(history, 0, 0)
    out = list(history)
    saved = replaced = 0
    for index in indices:
        message = history[index]
        assert isinstance(message, UserMessage | ToolMessage)
        saved += sum(cost(image.width, image.height) for image in message.images)
        replaced += len(message.images)
        out[index] = stand_in(message)
    return ImageAging(out, replaced, saved)


def stand_in(message: UserMessage | ToolMessage) -> UserMessage | ToolMessage:
    """The message without its images, each named by one line after its text."""
    text = "\n".join([message.content, *(image.stand_in() for image in message.images)]).strip()
    return message.model_copy(update={"content": text, "images": ()})
