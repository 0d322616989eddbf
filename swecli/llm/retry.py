"""Retries with exponential backoff and jitter, honouring the server's `Retry-After`.

A provider attempt raises `Retryable(error)` for failures worth another try (408/409/429/5xx/529,
connection errors, timeouts, a stream cut short); any other exception goes straight through. After
`max_retries` retries the wrapped error is raised with the number of attempts added to its message
(and kept in `error.attempts`). With a `deadline` (a `time.monotonic()` instant, from
`Settings.request_deadline`) no retry starts, or waits, past it: the error then names the setting.

A retry restarts the response from the beginning. When a stream broke after some text was already
shown, the new attempt streams its own text again: `on_retry` lets the front end say so.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from swecli.errors import ControlFlow
from swecli.llm.base import Cancelled, CancelToken, ProviderError
from swecli.records import datarecord

T = TypeVar("T")


class Retryable(ControlFlow):
    """Raised by an attempt: `error` is what the user sees if no retry is left."""

    def __init__(self, error: ProviderError, retry_after: float | None = None, max_retries: int | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after
        self.max_retries = max_retries
        """A tighter bound for this kind of failure (an empty stream is retried only once)."""


@datarecord(frozen=True)
class RetryNotice:
    """Told to `on_retry` before each wait, so a front end can show why nothing is happening."""

    attempt: int
    """The attempt that just failed, from 1."""
    max_attempts: int
    delay: float
    error: ProviderError


@datarecord
class RetryPolicy:
    """How many times, and how long apart, a failed request is tried again."""

    max_retries: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 300.0
    """A server asking for a longer wait than this gets a clear error instead of a frozen prompt."""
    sleep: Callable[[float], None] | None = None
    """Injected by tests; by default the wait is a cancellable `CancelToken.wait`."""
    on_retry: Callable[[RetryNotice], None] | None = None
    jitter: Callable[[], float] = random.random

    def backoff(self, retry: int) -> float:
        """Delay before retry number `retry` (from 0): exponential, capped, with 'equal jitter'."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** retry))
        return float(ceiling / 2 + ceiling / 2 * self.jitter())


def retry_stream(attempt: Callable[[], Iterator[T]], policy: RetryPolicy,
                 cancel: CancelToken | None = None, deadline: Deadline | None = None) -> Iterator[T]:
    """Run `attempt()` until it completes, retrying `Retryable` failures per `policy`."""
    retries = 0
    while True:
        if cancel is not None and cancel.cancelled:
            raise Cancelled(None)
        try:
            yield from attempt()
            return
        except Retryable as failure:
            limit = policy.max_retries if failure.max_retries is None else min(policy.max_retries,
                                                                                failure.max_retries)
            wait = _wait_for(failure, policy, retries)
            if retries >= limit or wait is None:
                raise _final(failure, retries + 1, policy) from None
            if deadline is not None and deadline.passed(wait):
                note = f"gave up after {_attempts(retries + 1)}: another would pass {deadline.limit()}"
                raise failure.error.with_note(note, retries + 1) from None
            if policy.on_retry is not None:
                policy.on_retry(RetryNotice(retries + 1, limit + 1, wait, failure.error))
            _sleep(wait, policy, cancel)
            retries += 1


def _wait_for(failure: Retryable, policy: RetryPolicy, retries: int) -> float | None:
    """Seconds to wait before the next attempt; None when the server asks for more than we accept."""
    if failure.retry_after is None:
        return policy.backoff(retries)
    if failure.retry_after > policy.max_retry_after:
        return None
    return max(0.0, failure.retry_after)


@datarecord(frozen=True)
class Deadline:
    """The instant a model call gives up, retries included (`Settings.request_deadline`)."""

    at: float
    """A `time.monotonic()` instant."""
    seconds: float
    setting: str = "request_deadline"

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def passed(self, plus: float = 0.0) -> bool:
        return time.monotonic() + plus >= self.at

    def limit(self) -> str:
        return f"the {format_seconds(self.seconds)} limit set by {self.setting}; raise it if the server needs longer"


def _attempts(count: int) -> str:
    return "1 attempt" if count == 1 else f"{count} attempts"


def format_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s" if rest else f"{minutes} min"


def _final(failure: Retryable, attempts: int, policy: RetryPolicy) -> ProviderError:
    error = failure.error
    if failure.retry_after is not None and failure.retry_after > policy.max_retry_after:
        note = f"the server asks to wait {failure.retry_after:.0f}s before retrying; try again later"
    elif attempts > 1:
        note = f"gave up after {attempts} attempts"
    else:
        return error
    return error.with_note(note, attempts)


def _sleep(seconds: float, policy: RetryPolicy, cancel: CancelToken | None) -> None:
    if policy.sleep is not None:
        policy.sleep(seconds)
    elif cancel is not None:
        cancel.wait(seconds)
    else:
        time.sleep(seconds)
    if cancel is not None and cancel.cancelled:
        raise Cancelled(None)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms", "").strip()
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime  # an HTTP date is rare: email is not imported on every start

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
