"""LLM caption extractor through any OpenAI-compatible endpoint (paper Appendix E).

It answers in every value a record may carry (ultrasound, the organs beyond the paper's four: prompt v2);
each source narrows the answer to its caption profile (curation.profiles.Profile.narrow).
Runs only when an endpoint (``extract.llm.base_url``) is configured. The key is
read from the environment variable named by ``extract.llm.api_key_env`` and is
never logged, cached or put in an error message. Every answer is validated
against a JSON schema; answers are cached by (caption hash, prompt version,
model) in an append-only JSONL file, so re-runs are free and nothing paid for
is lost (invalid answers are kept in the cache with their error, and reported).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema

from probmed.benchmark.curation.extract_rules import Extraction
from probmed.core.errors import ConfigError
from probmed.core.params_schema import ExtractLLM
from probmed.core.secrets import redact_urls
from probmed.core.vocab import MODALITIES, ORGANS

SYSTEM_PROMPT = """You are given a caption describing a medical image. Extract the imaging modality, \
the organ (body region) and the medical conditions or diseases visible in the image, with their locations \
if the caption states them. Do not include anything that cannot be inferred from the image itself (patient \
history, treatment). A condition the caption negates ("no evidence of pneumothorax") is not a finding.
Answer with JSON only: {"modality": one of %s, "organ": one of %s, "findings": [{"condition": "...", \
"position": "..." or null}]}. Use "other" for a modality or organ outside the listed ones and "unknown" \
when the caption does not say. A position must contain a positional descriptor stated in the caption \
together with the condition; otherwise it is null.

Examples:
Caption: "Fig. 1. MRI abdomen and pelvis showing the cervical mass."
{"modality": "mri", "organ": "abdomen", "findings": [{"condition": "cervical mass", "position": null}]}
Caption: "Chest radiograph shows enlargement of the hilar mass with spread into the left lower lobe."
{"modality": "x-ray", "organ": "chest", "findings": [{"condition": "hilar mass", "position": "left lower lobe"}]}
Caption: "Axial CT of the head without evidence of hemorrhage."
{"modality": "ct", "organ": "brain", "findings": []}
Caption: "Transvaginal ultrasound showing a cyst of the left ovary."
{"modality": "ultrasound", "organ": "pelvis", "findings": [{"condition": "cyst", "position": "left ovary"}]}""" % (
    list(MODALITIES), list(ORGANS))

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["modality", "organ", "findings"],
    "additionalProperties": False,
    "properties": {
        "modality": {"enum": list(MODALITIES)},
        "organ": {"enum": list(ORGANS)},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["condition", "position"],
                "additionalProperties": False,
                "properties": {
                    "condition": {"type": "string", "minLength": 1},
                    "position": {"type": ["string", "null"]},
                },
            },
        },
    },
}


class LLMAnswerError(ValueError):
    """The model's answer is not valid JSON or does not match the schema."""


def parse_json_answer(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """JSON object from a model answer (code fences tolerated), validated against schema."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        raise LLMAnswerError(f"invalid JSON ({exc.msg} at char {exc.pos})") from None
    try:
        jsonschema.validate(obj, schema)
    except jsonschema.ValidationError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise LLMAnswerError(f"schema violation at {path}: {exc.message}") from None
    return obj


class LLMClient:
    """Chat completions returning schema-checked JSON, with a crash-safe answer cache."""

    def __init__(self, settings: ExtractLLM) -> None:
        if not settings.base_url:
            raise ConfigError("extract.llm.base_url is not set: the LLM path runs only when an endpoint is configured")
        from openai import OpenAI

        self.settings = settings
        key = os.environ.get(settings.api_key_env) or "not-needed"
        self.client = OpenAI(base_url=settings.base_url, api_key=key, timeout=settings.timeout_s, max_retries=settings.max_retries)
        self.cache_path = Path(settings.cache)
        self.cache: dict[str, dict[str, Any]] = {}
        if self.cache_path.exists():
            for line in self.cache_path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line from a crash
                self.cache[entry["key"]] = entry
        self.requests = 0

    def cache_key(self, task: str, text: str) -> str:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
        return f"{task}:{digest}:{self.settings.prompt_version}:{self.settings.model}"

    def _append(self, entry: dict[str, Any]) -> None:
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.cache_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.cache[entry["key"]] = entry

    def ask(self, task: str, system: str, user: str, schema: dict[str, Any]) -> dict[str, Any]:
        """Validated JSON answer; raises LLMAnswerError (the raw answer is still cached)."""
        key = self.cache_key(task, system + "\x1f" + user)
        hit = self.cache.get(key)
        if hit is not None and "result" in hit:
            return hit["result"]
        if hit is not None and "raw" in hit:
            return parse_json_answer(hit["raw"], schema)  # paid-for invalid answer: re-judge, don't re-buy
        import openai

        self.requests += 1
        try:
            resp = self.client.chat.completions.create(
                model=self.settings.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                temperature=0,
            )
        except (openai.APIConnectionError, openai.AuthenticationError) as exc:
            # the endpoint as a whole is unusable: stop with a clear error (answers so far are cached)
            raise ConfigError(f"LLM endpoint {redact_urls(self.settings.base_url)} unusable: {type(exc).__name__}") from None
        except openai.APIStatusError as exc:
            raise LLMAnswerError(f"endpoint answered HTTP {exc.status_code}") from None
        raw = resp.choices[0].message.content or ""
        try:
            result = parse_json_answer(raw, schema)
        except LLMAnswerError as exc:
            self._append({"key": key, "raw": raw, "error": str(exc)})
            raise
        self._append({"key": key, "raw": raw, "result": result})
        return result


class LLMExtractor:
    """The caption -> metadata extractor answered by an LLM endpoint (same output as the rules)."""

    def __init__(self, settings: ExtractLLM) -> None:
        self.llm = LLMClient(settings)

    def extract(self, caption_id: str, caption: str) -> Extraction:
        """One caption; raises LLMAnswerError on an invalid answer."""
        obj = self.llm.ask("extract", SYSTEM_PROMPT, f'Caption: "{caption.strip()}"', SCHEMA)
        findings = [{"condition": f["condition"].strip().lower(), "position": (f["position"] or None)} for f in obj["findings"]]
        return Extraction(id=caption_id, modality=obj["modality"], organ=obj["organ"], findings=findings)
