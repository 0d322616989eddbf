from __future__ import annotations

import json

import pytest

from swecli.llm.base import AuthError, ContextOverflowError, ProviderError, RateLimitError, TransientError
from swecli.llm.errors import classify_status, classify_stream_error, parse_error_body

OVERFLOW_BODIES = [
    # OpenAI / llama.cpp python server (non-streamed)
    {"error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 8192 tokens."}},
    # Anthropic
    {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > "
                                                                          "200000 maximum"}},
    # llama.cpp server (C++)
    {"error": {"code": 400, "type": "exceed_context_size_error",
               "message": "the request exceeds the available context size, try increasing it"}},
    # vLLM
    {"object": "error", "message": "This model's maximum context length is 32768 tokens. However, you requested "
                                   "40000 tokens.", "type": "BadRequestError", "code": 400},
    # Ollama-style plain string
    {"error": "input length exceeds the context window"},
]


@pytest.mark.parametrize("body", OVERFLOW_BODIES)
def test_context_overflow_wordings(body: dict[str, object]) -> None:
    error = classify_status("llamacpp", None, 400, json.dumps(body))
    assert isinstance(error, ContextOverflowError)
    assert "context window" in str(error)


def test_auth_names_the_provider_and_variable() -> None:
    error = classify_status("openai", "OPENAI_API_KEY", 401, b'{"error": {"message": "Incorrect API key"}}')
    assert isinstance(error, AuthError)
    assert str(error).startswith("API key rejected by openai (set OPENAI_API_KEY)")
    assert "Incorrect API key" in str(error)
    assert "SWECLI_API_KEY" in str(classify_status("openai-compatible", None, 403, b""))


def test_tokens_per_minute_limit_is_a_rate_limit_not_an_overflow() -> None:
    body = b'{"error": {"message": "Request too large for gpt-4o on tokens per min (TPM): Limit 30000"}}'
    assert isinstance(classify_status("openai", "OPENAI_API_KEY", 429, body), RateLimitError)


def test_server_errors_are_transient_and_others_keep_the_message() -> None:
    assert isinstance(classify_status("x", None, 503, b"upstream down"), TransientError)
    assert isinstance(classify_status("x", None, 529, b'{"error": {"type": "overloaded_error"}}'), TransientError)
    error = classify_status("x", None, 404, b'{"error": {"message": "model nope not found"}}', "Not Found")
    assert type(error) is ProviderError
    assert "model nope not found" in str(error) and "404" in str(error) and "model name" in str(error)


def test_request_too_large_is_an_overflow() -> None:
    assert isinstance(classify_status("anthropic", None, 413, b"{}"), ContextOverflowError)


def test_body_shapes() -> None:
    assert parse_error_body(b"<html>Bad   Gateway</html>").message == "Bad Gateway"
    assert parse_error_body({"detail": "x"}).message == "x"
    assert len(parse_error_body("y" * 5000).message) < 600


def test_stream_errors() -> None:
    error, retry = classify_stream_error("anthropic", {"type": "error", "error": {"type": "overloaded_error",
                                                                                 "message": "Overloaded"}})
    assert isinstance(error, TransientError) and retry
    error, retry = classify_stream_error("x", {"error": {"code": 500, "message": "boom"}})
    assert isinstance(error, TransientError) and retry
    error, retry = classify_stream_error("x", {"error": {"type": "invalid_request_error", "message": "bad tool"}})
    assert type(error) is ProviderError and not retry and "bad tool" in str(error)
    error, retry = classify_stream_error("x", {"error": {"message": "exceeds the available context size"}})
    assert isinstance(error, ContextOverflowError) and not retry
