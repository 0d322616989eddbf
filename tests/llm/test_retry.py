from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from email.utils import formatdate

import pytest

from swecli.llm.base import Cancelled, CancelToken, ContextOverflowError, RateLimitError, TransientError
from swecli.llm.retry import Deadline, Retryable, RetryNotice, RetryPolicy, parse_retry_after, retry_stream


def flaky(failures: list[Exception], result: str = "ok") -> tuple[list[int], Callable[[], Iterator[str]]]:
    calls: list[int] = []

    def attempt() -> Iterator[str]:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        yield result

    return calls, attempt


def test_retries_then_succeeds_with_growing_backoff() -> None:
    slept: list[float] = []
    notices: list[RetryNotice] = []
    calls, attempt = flaky([Retryable(TransientError("down")) for _ in range(3)])
    policy = RetryPolicy(max_retries=5, sleep=slept.append, on_retry=notices.append, jitter=lambda: 1.0)
    assert list(retry_stream(attempt, policy)) == ["ok"]
    assert len(calls) == 4
    assert slept == [1.0, 2.0, 4.0]
    assert [n.attempt for n in notices] == [1, 2, 3] and notices[0].max_attempts == 6


def test_jitter_stays_within_half_and_full_backoff() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    for retry in range(8):
        ceiling = min(8.0, 2.0 ** retry)
        assert ceiling / 2 <= policy.backoff(retry) <= ceiling


def test_retry_after_is_honoured() -> None:
    slept: list[float] = []
    _, attempt = flaky([Retryable(RateLimitError("slow down"), retry_after=7.5)])
    assert list(retry_stream(attempt, RetryPolicy(sleep=slept.append))) == ["ok"]
    assert slept == [7.5]


def test_gives_up_with_a_clear_message() -> None:
    calls, attempt = flaky([Retryable(TransientError("openai is unavailable (HTTP 500)")) for _ in range(9)])
    with pytest.raises(TransientError, match=r"HTTP 500.*gave up after 3 attempts"):
        list(retry_stream(attempt, RetryPolicy(max_retries=2, sleep=lambda s: None)))
    assert len(calls) == 3


def test_per_failure_limit() -> None:
    calls, attempt = flaky([Retryable(TransientError("empty"), max_retries=1) for _ in range(5)])
    with pytest.raises(TransientError, match="gave up after 2 attempts"):
        list(retry_stream(attempt, RetryPolicy(max_retries=5, sleep=lambda s: None)))
    assert len(calls) == 2


def test_no_retries_raises_the_error_unchanged() -> None:
    _, attempt = flaky([Retryable(TransientError("down"))])
    with pytest.raises(TransientError) as info:
        list(retry_stream(attempt, RetryPolicy(max_retries=0)))
    assert str(info.value) == "down"


def test_too_long_retry_after_fails_at_once() -> None:
    calls, attempt = flaky([Retryable(RateLimitError("rate limited"), retry_after=3600)])
    with pytest.raises(RateLimitError, match="wait 3600s"):
        list(retry_stream(attempt, RetryPolicy(sleep=lambda s: None)))
    assert len(calls) == 1


def test_other_errors_are_not_retried() -> None:
    calls, attempt = flaky([ValueError("bug")])
    with pytest.raises(ValueError):
        list(retry_stream(attempt, RetryPolicy(sleep=lambda s: None)))
    assert len(calls) == 1


def test_cancel_interrupts_the_wait() -> None:
    cancel = CancelToken()
    _, attempt = flaky([Retryable(RateLimitError("slow"), retry_after=120)])
    threading.Timer(0.2, cancel.cancel).start()
    with pytest.raises(Cancelled):
        list(retry_stream(attempt, RetryPolicy(), cancel))


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "12"}) == 12.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None
    now = 1_700_000_000.0
    assert parse_retry_after({"Retry-After": formatdate(now + 30, usegmt=True)}, now=now) == pytest.approx(30)
    assert parse_retry_after({"Retry-After": formatdate(now - 30, usegmt=True)}, now=now) == 0.0


def test_no_retry_starts_past_the_deadline() -> None:
    calls, attempt = flaky([Retryable(TransientError("openai sent nothing for 600s")) for _ in range(5)])
    deadline = Deadline(time.monotonic() + 0.5, 0.5)  # a retry would wait at least 0.5 s: past it
    with pytest.raises(TransientError) as failure:
        list(retry_stream(attempt, RetryPolicy(sleep=lambda s: None, jitter=lambda: 1.0), deadline=deadline))
    assert len(calls) == 1 and failure.value.attempts == 1
    assert str(failure.value) == ("openai sent nothing for 600s (gave up after 1 attempt: another would pass the "
                                  "0.5s limit set by request_deadline; raise it if the server needs longer)")
    assert failure.value.reason == "openai sent nothing for 600s"


def test_the_attempt_count_travels_with_the_error() -> None:
    _, attempt = flaky([Retryable(ContextOverflowError("empty stream", server_window=4096), max_retries=1)] * 2)
    with pytest.raises(ContextOverflowError) as failure:
        list(retry_stream(attempt, RetryPolicy(sleep=lambda s: None)))
    assert failure.value.attempts == 2 and failure.value.server_window == 4096
    assert failure.value.reason == "empty stream" and str(failure.value) == "empty stream (gave up after 2 attempts)"
