"""OpenAI-compatible backend: GPT-4o and anything speaking the same protocol.

vLLM, `transformers serve`, Azure and gateways all take the same chat request.
Images go as base64 PNG data URLs of the decoded pixels (optionally shrunk to a
longest side), never the raw file. Requests
run async with bounded concurrency and a requests-per-minute limit; each has a
deadline of `timeout_s` for the whole request, body included (a server that
trickles bytes cannot hold it). What can heal is retried with exponential
backoff that honours Retry-After, up to `max_retries`, after which the question
is recorded as failed (never dropped): 429, 5xx, 408/409, timeouts, malformed
replies, refused or dropped connections (a server restarting). What cannot heal
is not retried: a 400 or 422 is that question's failure; bad credentials (401,
403), an unknown model (404), a host name that does not resolve or a TLS
failure stop the run with a clear error, and a URL no request can use is
refused before the first. After such an error, or when the run is asked to
stop (Ctrl-C, SIGTERM, a full disk, the parent gone), nothing new is asked and
the requests in flight are awaited, so every answer the server returns is
stored; a second stop abandons them. Refusals (`message.refusal`,
`finish_reason == "content_filter"`, content-filter 400s) are recorded as
refusals. Where the endpoint returns logprobs, P(yes) vs P(no) is read from the
first answer token. The key comes only from the environment variable named by
`api_key_env`, credentials in the endpoint URL only from the one named by
`base_url_env`; all are redacted from every message this module produces.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import functools
import json
import math
import os
import random
import socket
import ssl
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, TypeVar

from probmed.core.errors import BackendError, ConfigError, EndpointUnreachableError, MissingFileError
from probmed.core.params_schema import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Pricing
from probmed.core.secrets import Redactor, redact_urls, url_secrets
from probmed.inference.images import png_bytes
from probmed.inference.models.base import Answer, AnswerCallback, Backend, Item, not_asked
from probmed.inference.models.config import BackendConfig, answer_field, run_field
from probmed.inference.models.endpoint import DEFAULT_BASE_URL, check_base_url, endpoint_key, former_spellings
from probmed.inference.models.pricing import cost_usd
from probmed.infra.process import ABANDON

_POLL_S = 0.1  # how often waits look whether the run was asked to stop
C = TypeVar("C", bound="OpenAIConfig")


class _Retryable(Exception):
    """A failed request worth retrying; `retry_after` is the server's Retry-After, if it gave one."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class _ConnectionFailed(_Retryable):
    """No connection to the endpoint at all: when every retry ends so, the endpoint is unreachable."""


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what caused it, down the chain (the OS error under the client's connection error)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _unhealable(exc: BaseException) -> tuple[type[BackendError], str] | None:
    """(error class, why) for a connection failure no retry heals: a host name that does not resolve, a TLS
    failure (an untrusted certificate, no TLS spoken there); None for one that may (refused, reset)."""
    for cause in _causes(exc):
        if isinstance(cause, socket.gaierror):
            return EndpointUnreachableError, f"its host name does not resolve ({cause.strerror or cause})"
        if isinstance(cause, ssl.SSLError):
            return BackendError, f"the TLS handshake failed ({getattr(cause, 'verify_message', None) or cause.reason})"
    return None


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
    max_tokens: PositiveInt = answer_field(64)
    temperature: NonNegativeFloat = answer_field(0.0)
    logprobs: bool = answer_field(False)  # read P(yes) from the first answer token's logprobs
    max_image_side: PositiveInt | None = answer_field(None)  # images are shrunk to this longest side
    extra_body: dict[str, Any] | None = answer_field(None, when_set=True)  # server-specific request fields ({add_special_tokens: true}: vLLM)
    max_tokens_param: str = run_field("max_tokens")  # or max_completion_tokens (newer OpenAI models)
    api_key_env: str | None = run_field(None)  # the environment variable holding the key
    base_url_env: str | None = run_field(None)  # the environment variable holding the endpoint (credentials allowed)
    require_key: bool = run_field(False)  # refuse to run without a key even on a local endpoint
    concurrency: PositiveInt = run_field(8)
    rpm: NonNegativeFloat | None = run_field(0.0)  # requests per minute (0 or null: unlimited)
    max_retries: NonNegativeInt = run_field(5)
    timeout_s: PositiveFloat = run_field(60.0)
    backoff_base_s: NonNegativeFloat = run_field(1.0)
    backoff_max_s: NonNegativeFloat = run_field(60.0)

    @classmethod
    def from_entry(cls: type[C], name: str, entry: Mapping[str, Any]) -> C:
        """The typed entry, its `base_url` checked (every command checks every entry before any work)."""
        config = super().from_entry(name, entry)
        if config.base_url:
            check_base_url(config.base_url, f"models.{name}.base_url")
        return config


class OpenAIBackend(Backend):
    """A model behind an OpenAI-compatible chat endpoint, asked concurrently with retries and rate limiting."""

    kind = "openai"
    config_class = OpenAIConfig
    config: OpenAIConfig  # built from config_class by Backend.__init__
    batch_by_image = False
    sends_system_prompt = True

    def __init__(self, name, cfg, context=None):
        super().__init__(name, cfg, context)
        written = self._written_base_url()
        self.base_url = written.rstrip("/") if written else DEFAULT_BASE_URL  # what is asked, as written
        self.config = self.config.replace(base_url=endpoint_key(written))  # how its answers are keyed
        self._former = former_spellings(written)
        self.model_id = self.config.model_id
        key_env = self.config.api_key_env
        key = os.environ.get(key_env) if key_env else None
        if not key:
            if self.config.base_url is None or self.config.require_key:
                raise ConfigError(
                    f"models.{name}: the API key environment variable {key_env or '(models.' + name + '.api_key_env)'}"
                    " is not set"
                )
            key = "EMPTY"  # local servers (vLLM, transformers serve) accept any key
        self._key = key
        self._redactor = Redactor(None if key == "EMPTY" else key, *url_secrets(self.base_url))
        self._halted = False  # an error no retry heals: the rest of the batch is not asked
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

    def _written_base_url(self) -> str | None:
        """The endpoint as configured: `base_url` (checked with the entry), else the variable `base_url_env` names."""
        if self.config.base_url:
            return self.config.base_url
        env = self.config.base_url_env
        url = os.environ.get(env) if env else None
        if url:
            check_base_url(url, f"models.{self.name}.base_url_env: ${env}")
        return url or None

    # --- identity and secrets -----------------------------------------------------

    @property
    def _credentials(self) -> str:
        """Where the credentials sent came from, for the message of a 401 or 403."""
        if url_secrets(self.base_url):  # the URL's userinfo goes as Basic auth, in place of the key
            return f"check the credentials in the URL in ${self.config.base_url_env}"
        return f"check the key in ${self.config.api_key_env}" if self.config.api_key_env else "no key was sent (api_key_env)"

    @property
    def endpoint(self) -> str:
        """The endpoint as messages show it: credentials masked."""
        return redact_urls(self.base_url)

    def fingerprints(self) -> list[dict[str, Any]]:
        """The key's fingerprint, then the ones stores kept before endpoints were normalised (`former_spellings`)."""
        current = self.fingerprint()
        rest = {k: v for k, v in current.items() if k != "base_url"}
        return [current, *({**rest, "base_url": url} if url else rest for url in self._former)]

    def redact(self, text: str) -> str:
        """`text` with the API key and the endpoint URL's credentials removed in every encoding a server may echo
        them (probmed.core.secrets)."""
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

    @property
    def _stopping(self) -> bool:
        """True once nothing new may be asked: the run was asked to stop, or an error no retry heals came back."""
        return self.stop_requested or self._halted

    async def _pause(self, seconds: float) -> None:
        """Sleep `seconds`, or less once the run is stopping (a backoff of a minute must not hold up a Ctrl-C)."""
        end = time.monotonic() + seconds
        while not self._stopping and (left := end - time.monotonic()) > 0:
            await asyncio.sleep(min(left, _POLL_S))

    async def _rate_limit(self) -> None:
        if self.rpm <= 0:
            return
        now = time.monotonic()
        slot = max(now, self._next_slot)
        self._next_slot = slot + 60.0 / self.rpm
        if slot > now:
            await self._pause(slot - now)

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
            async with asyncio.timeout(self.timeout_s):  # the whole request, body included, not each read
                resp = await client.chat.completions.create(**kwargs)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise BackendError(
                f"model {self.name}: the endpoint rejected the credentials (HTTP {exc.status_code}); {self._credentials}"
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
        except (openai.APITimeoutError, TimeoutError):
            raise _Retryable(f"timed out after {self.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            unhealable = _unhealable(exc)
            if unhealable is not None:
                error, why = unhealable
                raise error(f"model {self.name}: endpoint {self.endpoint}: {why}; not retried") from None
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

    async def _ask(self, client, item: Item, messages: list[dict[str, Any]], sem: asyncio.Semaphore) -> Answer:
        attempt = 0
        while True:
            async with sem:
                if self._stopping:
                    return not_asked()
                await self._rate_limit()
                if self._stopping:
                    return not_asked()
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
                        f"model {self.name}: endpoint {self.endpoint} is unreachable (connection failed {attempt + 1} times)"
                    )
                return Answer(error=self.redact(f"gave up after {attempt + 1} attempts: {last}"), retries=attempt)
            delay = last.retry_after
            if delay is None:
                delay = min(self.backoff_max_s, self.backoff_base_s * 2**attempt) * (0.5 + self._rng.random() / 2)
            attempt += 1
            self._stats["retries"] += 1
            await self._pause(min(delay, self.backoff_max_s))

    async def _run(self, items: list[Item], on_answer: AnswerCallback | None) -> list[Answer]:
        """Ask every item; after an error (the first is raised) or a stop, nothing new is asked and the requests in
        flight are awaited, each within its deadline, so every answer the server returns reaches `on_answer`;
        a second stop (ABANDON) cancels them."""
        client = self._ensure_client()
        # every image encoded before the batch's first request: encoding while requests are in flight would block
        # the event loop and run down their deadlines (each image once: the encoding is memoised)
        messages = [self._messages(item) for item in items]
        sem = asyncio.Semaphore(max(1, self.concurrency))
        results: list[Answer | None] = [None] * len(items)
        errors: list[Exception] = []
        self._halted = False

        async def one(i: int) -> None:
            try:
                ans = await self._ask(client, items[i], messages[i], sem)
                results[i] = ans
                if on_answer is not None:
                    on_answer(i, ans)
            except Exception as exc:  # noqa: BLE001 - raised below, once what is in flight has arrived
                errors.append(exc)
                self._halted = True

        tasks = [asyncio.ensure_future(one(i)) for i in range(len(items))]
        everything = asyncio.gather(*tasks)
        try:
            while not everything.done() and not ABANDON.is_set():
                await asyncio.wait([everything], timeout=_POLL_S)
        finally:
            everything.cancel()  # no-op once done; else the abandoned requests end here, none left pending
            await asyncio.gather(everything, return_exceptions=True)
        if errors:
            raise errors[0]
        return [r for r in results if r is not None]

    def answer(self, items: list[Item], on_answer: AnswerCallback | None = None) -> list[Answer]:
        self._ensure_client()
        assert self._loop is not None
        run = self._loop.create_task(self._run(items, on_answer))
        try:
            return self._loop.run_until_complete(run)
        except BackendError as exc:
            raise type(exc)(self.redact(str(exc))) from None
        except BaseException:  # interrupted inside the loop: end the requests here, so no task is left pending
            run.cancel()
            with contextlib.suppress(BaseException):
                self._loop.run_until_complete(asyncio.gather(run, return_exceptions=True))
            raise

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
