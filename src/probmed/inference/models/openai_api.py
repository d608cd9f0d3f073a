"""OpenAI-compatible backend: GPT-4o and anything speaking the same protocol.

vLLM, `transformers serve`, Azure and gateways all take the same chat request.
Images go as base64 PNG data URLs of the decoded pixels (optionally shrunk to a
longest side), never the raw file. Requests
run async with bounded concurrency and a requests-per-minute limit; 429, 5xx,
timeouts and malformed replies are retried with exponential backoff that honours
Retry-After, up to `max_retries`, after which the question is recorded as failed
(never dropped). Refusals (`message.refusal`, `finish_reason == "content_filter"`,
content-filter 400s) are recorded as refusals. Bad credentials, an unknown model
or an unreachable endpoint stop the run with a clear error. Where the endpoint
returns logprobs, P(yes) vs P(no) is read from the first answer token. The key
comes only from the environment variable named by `api_key_env` and is
redacted from every message this module produces.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import json
import math
import os
import random
import time
from pathlib import Path
from typing import Any

from probmed.core.errors import BackendError, ConfigError, EndpointUnreachableError, MissingFileError
from probmed.core.params_schema import Pricing
from probmed.core.secrets import Redactor
from probmed.inference.images import png_bytes
from probmed.inference.models.base import Answer, AnswerCallback, Backend, Item, not_asked
from probmed.inference.models.config import BackendConfig, answer_field, run_field
from probmed.inference.models.pricing import cost_usd


class _Retryable(Exception):
    """A failed request worth retrying; `retry_after` is the server's Retry-After, if it gave one."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class _ConnectionFailed(_Retryable):
    """No connection to the endpoint at all: when every retry ends so, the endpoint is unreachable."""


def image_data_url(path: Path, max_side: int | None = None) -> str:
    """The decoded image re-encoded as PNG (shrunk to `max_side`), as a data URL: never the file's own
    bytes, so nothing but pixels leaves the machine. Memoised by (path, size, mtime, max_side): the
    questions of one image share one encoding."""
    st = os.stat(path)
    return _data_url(str(path), st.st_size, st.st_mtime_ns, max_side)


@functools.lru_cache(maxsize=64)
def _data_url(path: str, size: int, mtime_ns: int, max_side: int | None) -> str:
    data = png_bytes(path, max_side)
    return f"data:image/png;base64,{base64.b64encode(data).decode('ascii')}"


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                return None
    return None


def p_yes_from_logprobs(choice: Any) -> float | None:
    """P(yes)/(P(yes)+P(no)) over the first generated token's top logprobs, if any."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    first = content[0]
    py = pn = 0.0
    for cand in list(getattr(first, "top_logprobs", None) or []) + [first]:
        word = str(getattr(cand, "token", "")).strip().lower()
        lp = getattr(cand, "logprob", None)
        if lp is None:
            continue
        if word == "yes":
            py = max(py, math.exp(lp))
        elif word == "no":
            pn = max(pn, math.exp(lp))
    if py + pn == 0:
        return None
    return py / (py + pn)


@dataclasses.dataclass(frozen=True, kw_only=True)
class OpenAIConfig(BackendConfig):
    """The keys of an OpenAI-compatible endpoint entry: what is asked (answer fields) and how (run fields)."""

    model_id: str = answer_field(hash_as="weights")  # the API's model name; a local directory is keyed by content
    revision: str | None = answer_field(None)
    base_url: str | None = answer_field(None, when_set=True)  # the endpoint (null: api.openai.com)
    max_tokens: int = answer_field(64)
    temperature: float = answer_field(0.0)
    logprobs: bool = answer_field(False)  # read P(yes) from the first answer token's logprobs
    max_image_side: int | None = answer_field(None)  # images are shrunk to this longest side
    extra_body: dict | None = answer_field(None, when_set=True)  # server-specific request fields ({add_special_tokens: true}: vLLM)
    max_tokens_param: str = run_field("max_tokens")  # or max_completion_tokens (newer OpenAI models)
    api_key_env: str | None = run_field(None)  # the environment variable holding the key
    base_url_env: str | None = run_field(None)  # the environment variable holding the endpoint
    require_key: bool = run_field(False)  # refuse to run without a key even on a local endpoint
    concurrency: int = run_field(8)
    rpm: float | None = run_field(0.0)  # requests per minute (0 or null: unlimited)
    max_retries: int = run_field(5)
    timeout_s: float = run_field(60.0)
    backoff_base_s: float = run_field(1.0)
    backoff_max_s: float = run_field(60.0)


class OpenAIBackend(Backend):
    """A model behind an OpenAI-compatible chat endpoint, asked concurrently with retries and rate limiting."""

    kind = "openai"
    config_class = OpenAIConfig
    config: OpenAIConfig  # built from config_class by Backend.__init__
    batch_by_image = False
    sends_system_prompt = True

    def __init__(self, name, cfg, context=None):
        super().__init__(name, cfg, context)
        base_url = self.config.base_url
        if not base_url and self.config.base_url_env:
            base_url = os.environ.get(self.config.base_url_env)
        self.config = self.config.replace(base_url=base_url.rstrip("/") if base_url else None)  # keyed as used
        self.model_id = self.config.model_id
        self.base_url = self.config.base_url
        key_env = self.config.api_key_env
        key = os.environ.get(key_env) if key_env else None
        if not key:
            if self.base_url is None or self.config.require_key:
                raise ConfigError(
                    f"models.{name}: the API key environment variable {key_env or '(models.' + name + '.api_key_env)'}"
                    " is not set"
                )
            key = "EMPTY"  # local servers (vLLM, transformers serve) accept any key
        self._key = key
        self._redactor = Redactor(None if key == "EMPTY" else key)
        self.concurrency = self.config.concurrency
        self.rpm = self.config.rpm or 0.0
        self.max_retries = self.config.max_retries
        self.timeout_s = self.config.timeout_s
        self.backoff_base_s = self.config.backoff_base_s
        self.backoff_max_s = self.config.backoff_max_s
        self.max_tokens = self.config.max_tokens
        self.temperature = self.config.temperature
        self.logprobs = self.config.logprobs
        self.max_image_side = self.config.max_image_side
        self.prices = {name: Pricing(**price) for name, price in (self.context.get("pricing") or {}).items()}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client = None
        self._next_slot = 0.0
        self._rng = random.Random(0)
        self._stats = {"requests": 0, "retries": 0, "failed": 0, "refusals": 0, "cost_usd": 0.0}

    # --- identity and secrets -----------------------------------------------------

    def redact(self, text: str) -> str:
        """`text` with the API key removed in every encoding a server may echo it (probmed.core.secrets)."""
        return self._redactor(text)

    def stats(self) -> dict[str, Any]:
        return dict(self._stats)

    # --- the async machinery ----------------------------------------------------

    def _ensure_client(self):
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=self._key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s
            )
        return self._client

    async def _rate_limit(self) -> None:
        if self.rpm <= 0:
            return
        now = time.monotonic()
        slot = max(now, self._next_slot)
        self._next_slot = slot + 60.0 / self.rpm
        if slot > now:
            await asyncio.sleep(slot - now)

    def _messages(self, item: Item) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        system = self.context.get("system_prompt")
        if system:
            messages.append({"role": "system", "content": system})
        content: list[dict[str, Any]] = []
        if item.image_path is not None:
            try:
                url = image_data_url(item.image_path, self.max_image_side)
            except (OSError, ValueError) as exc:
                raise MissingFileError(f"image {item.image_id}: cannot read {item.image_path}: {exc}") from None
            content.append({"type": "image_url", "image_url": {"url": url}})
        content.append({"type": "text", "text": item.prompt})
        messages.append({"role": "user", "content": content})
        return messages

    async def _request_once(self, client, item: Item, messages) -> Answer:
        import openai

        kwargs: dict[str, Any] = {
            "model": self.model_id,
            "messages": messages,
            # newer OpenAI models take max_completion_tokens; vLLM, transformers serve and gpt-4o max_tokens
            self.config.max_tokens_param: item.max_new_tokens or self.max_tokens,
            "temperature": self.temperature,
        }
        if self.logprobs and item.task == "answer":
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = 5
        if self.config.extra_body:
            kwargs["extra_body"] = dict(self.config.extra_body)
        t0 = time.perf_counter()
        self._stats["requests"] += 1
        try:
            resp = await client.chat.completions.create(**kwargs)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise BackendError(
                f"model {self.name}: the endpoint rejected the credentials (HTTP {exc.status_code}); "
                f"check the key in ${self.config.api_key_env}"
            ) from None
        except openai.NotFoundError as exc:
            raise BackendError(
                f"model {self.name}: the endpoint does not know model {self.model_id!r} (HTTP {exc.status_code})"
            ) from None
        except openai.RateLimitError as exc:
            raise _Retryable("HTTP 429 rate limited", _retry_after(exc)) from None
        except openai.BadRequestError as exc:
            body = json.dumps(getattr(exc, "body", None), default=str)
            if "content_filter" in body or "content_policy" in body:
                return Answer(response="", label="refusal", latency_s=time.perf_counter() - t0,
                              extra={"finish_reason": "content_filter"})
            return Answer(error=self.redact(f"HTTP 400 bad request: {exc.message}"[:300]))
        except openai.APITimeoutError:
            raise _Retryable(f"timed out after {self.timeout_s:g} s") from None
        except openai.APIConnectionError:
            raise _ConnectionFailed("connection failed") from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise _Retryable(f"HTTP {exc.status_code} server error", _retry_after(exc)) from None
            return Answer(error=self.redact(f"HTTP {exc.status_code}: {exc.message}"[:300]))
        except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError, RecursionError) as exc:
            raise _Retryable(f"malformed response ({type(exc).__name__})") from None
        latency = time.perf_counter() - t0
        try:
            choice = resp.choices[0]
            message = choice.message
            text = message.content or ""
            refusal = getattr(message, "refusal", None)
            finish = choice.finish_reason
        except (AttributeError, IndexError, TypeError):
            raise _Retryable("malformed response (no choices)") from None
        usage = getattr(resp, "usage", None)
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = cost_usd(str(self.model_id), pt, ct, self.prices)
        self._stats["cost_usd"] += cost
        ans = Answer(response=text, latency_s=latency, prompt_tokens=pt, completion_tokens=ct, cost_usd=cost,
                     extra={"finish_reason": finish})
        if refusal or finish == "content_filter":
            ans.label = "refusal"
            ans.response = refusal or text
            self._stats["refusals"] += 1
        elif item.task == "answer" and self.logprobs:
            ans.p_yes = p_yes_from_logprobs(choice)
        return ans

    async def _ask(self, client, item: Item, sem: asyncio.Semaphore) -> Answer:
        messages = self._messages(item)
        attempt = 0
        while True:
            async with sem:
                if self.stop_requested:
                    return not_asked()
                await self._rate_limit()
                try:
                    ans = await self._request_once(client, item, messages)
                    ans.retries = attempt
                    return ans
                except _Retryable as exc:
                    last = exc
            if attempt >= self.max_retries:
                self._stats["failed"] += 1
                if isinstance(last, _ConnectionFailed):
                    raise EndpointUnreachableError(
                        f"model {self.name}: endpoint {self.base_url or 'api.openai.com'} is unreachable "
                        f"(connection failed {attempt + 1} times)"
                    )
                return Answer(error=self.redact(f"gave up after {attempt + 1} attempts: {last}"), retries=attempt)
            delay = last.retry_after
            if delay is None:
                delay = min(self.backoff_max_s, self.backoff_base_s * 2**attempt) * (0.5 + self._rng.random() / 2)
            attempt += 1
            self._stats["retries"] += 1
            await asyncio.sleep(min(delay, self.backoff_max_s))

    async def _run(self, items: list[Item], on_answer: AnswerCallback | None) -> list[Answer]:
        client = self._ensure_client()
        sem = asyncio.Semaphore(max(1, self.concurrency))
        results: list[Answer | None] = [None] * len(items)

        async def one(i: int) -> None:
            ans = await self._ask(client, items[i], sem)
            results[i] = ans
            if on_answer is not None:
                on_answer(i, ans)

        tasks = [asyncio.ensure_future(one(i)) for i in range(len(items))]
        try:
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                if t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        finally:
            for t in tasks:
                if not t.done():
                    t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return [r for r in results if r is not None]

    def answer(self, items: list[Item], on_answer: AnswerCallback | None = None) -> list[Answer]:
        self._ensure_client()
        assert self._loop is not None
        try:
            return self._loop.run_until_complete(self._run(items, on_answer))
        except BackendError as exc:
            raise type(exc)(self.redact(str(exc))) from None

    def close(self) -> None:
        if self._loop is not None:
            if self._client is not None:
                try:
                    self._loop.run_until_complete(self._client.close())
                except Exception:  # noqa: BLE001 - closing a broken client must not mask the real error
                    pass
            self._loop.close()
        self._loop = None
        self._client = None
