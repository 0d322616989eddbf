from __future__ import annotations

import json

import pytest

from swecli.llm.base import AuthError, ContextOverflowError, ProviderError, RateLimitError, TransientError
from swecli.llm.errors import (
    classify_status,
    classify_stream_error,
    non_stream_error,
    overflow_numbers,
    parse_error_body,
)

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


NGINX_502 = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
             "</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


def test_an_outage_page_with_status_200_is_transient() -> None:
    error, retry = non_stream_error("openai", NGINX_502)
    assert retry and isinstance(error, TransientError)
    assert str(error) == ('openai is unavailable: a proxy answered with an error page ("502 Bad Gateway") '
                          "instead of a response")


def test_another_web_page_points_at_the_base_url() -> None:
    page = "<!DOCTYPE html><html><head><title>Sign in</title></head><body><form></form></body></html>"
    error, retry = non_stream_error("openai", page)
    assert not retry and str(error) == ('openai answered with a web page ("Sign in") instead of an API response; '
                                        "check base_url")


def test_an_html_error_status_reads_as_one_clean_sentence() -> None:
    error = classify_status("vllm", None, 502, NGINX_502, "Bad Gateway")
    assert isinstance(error, TransientError) and str(error) == "vllm is unavailable (HTTP 502 Bad Gateway)"
    error = classify_status("vllm", None, 503, "<html><body><h1>Maintenance until 10:00</h1></body></html>",
                            "Service Unavailable")
    assert str(error) == "vllm is unavailable (HTTP 503 Service Unavailable): Maintenance until 10:00"


@pytest.mark.parametrize(("text", "window", "requested"), [
    ("This model's maximum context length is 8192 tokens. However, you requested 12018 tokens (11018 in the "
     "messages, 1000 in the completion).", 8192, 12018),
    ("prompt is too long: 212,000 tokens > 200,000 maximum", 200_000, 212_000),
    ("Requested tokens (5000) exceed context window of 4096", 4096, 5000),
    ('{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", '
     '"type": "exceed_context_size_error", "n_prompt_tokens": 4500, "n_ctx": 4096}}', 4096, 4500),
    ("the model is loaded with context length of only 4096 tokens, which is not enough.", 4096, None),
    ("Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
     32_768, 40_000),
    ("This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens",
     131_072, 140_000),
    ("input is too long", None, None),
])
def test_overflow_errors_keep_the_numbers_they_name(text: str, window: int | None, requested: int | None) -> None:
    assert overflow_numbers(text) == (window, requested)


def test_overflow_errors_carry_the_servers_window() -> None:
    body = {"error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 4096 "
                      "tokens. However, you requested 5000 tokens."}}
    error = classify_status("llamacpp", None, 400, json.dumps(body))
    assert isinstance(error, ContextOverflowError) and (error.server_window, error.requested) == (4096, 5000)
    anthropic = {"type": "error", "error": {"type": "invalid_request_error",
                                            "message": "prompt is too long: 9000 tokens > 8192 maximum"}}
    streamed, retry = classify_stream_error("anthropic", anthropic)
    assert isinstance(streamed, ContextOverflowError) and not retry and streamed.server_window == 8192


@pytest.mark.parametrize(("text", "prompt"), [
    # llama-cpp-python's server and OpenAI: the messages alone, not "you requested" (which adds the completion)
    ("This model's maximum context length is 4096 tokens. However, you requested 4585 tokens (4585 in the "
     "messages, None in the completion). Please reduce the length of the messages or completion.", 4585),
    ("This model's maximum context length is 8192 tokens. However, you requested 12018 tokens (11018 in the "
     "messages, 1000 in the completion).", 11_018),
    ('{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", '
     '"type": "exceed_context_size_error", "n_prompt_tokens": 4500, "n_ctx": 4096}}', 4500),
    ("prompt is too long: 9000 tokens > 8192 maximum", 9000),
    ("Requested tokens (5000) exceed context window of 4096", 5000),
    ("This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens", None),
    ("input is too long", None),
])
def test_overflow_errors_keep_the_servers_count_of_the_prompt(text: str, prompt: int | None) -> None:
    """The server's own count of what was sent calibrates swecli's count exactly; a size that includes the
    completion is not taken for it."""
    error = classify_status("llamacpp", None, 400, json.dumps({"error": {"message": text}}))
    assert isinstance(error, ContextOverflowError) and error.prompt_tokens == prompt


def test_a_llama_server_without_jinja_is_not_retried_and_says_how_to_start_it() -> None:
    """llama-server --no-jinja answers any request with tools with HTTP 500 (seen against build 0c1e570): an
    outage by its status, but retrying cannot help; the error says which flag to change."""
    body = json.dumps({"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}})
    error = classify_status("llamacpp", None, 500, body, "Internal Server Error")
    assert type(error) is ProviderError  # not TransientError: not retried
    assert str(error).startswith("llamacpp refused the request (HTTP 500 Internal Server Error): tools param "
                                 "requires --jinja flag: llama-server is running without Jinja chat templates")
    assert "restart it without --no-jinja" in str(error)
