"""Secrets never come from params (refused before any work) and are redacted in every encoding a server echoes."""

from __future__ import annotations

import base64
import json
import urllib.parse
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from probmed.cli import main
from probmed.core.config import load_params
from probmed.core.errors import ConfigError
from probmed.core.secrets import Redactor, find_secrets

KEY = "sk-proj-7f3a9c0e1d2b4a68Xq/+Zt_-9"


def params_with(repo_root: Path, tmp_path: Path, **model_extra) -> Path:
    """A copy of the parameters whose registry (models.yaml, beside params.yaml) has `model_extra` in gpt-4o."""
    cfg = OmegaConf.load(repo_root / "models.yaml")
    for k, v in model_extra.items():
        cfg.models["gpt-4o"][k] = v
    OmegaConf.save(cfg, tmp_path / "models.yaml")
    path = tmp_path / "params.yaml"
    path.write_text((repo_root / "params.yaml").read_text())
    return path


@pytest.mark.parametrize("name", ["api_key", "token", "secret", "password", "hf_token", "client_secret"])
def test_a_credential_in_params_yaml_stops_the_command_before_any_work(repo_root, tmp_path, capsys, name):
    params = params_with(repo_root, tmp_path, **{name: KEY})
    out = tmp_path / "plan"
    assert main(["plan", "--params", str(params), "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"models.gpt-4o.{name}" in err and "api_key_env" in err and "environment" in err
    assert KEY not in err and not out.exists()


def test_a_key_shaped_value_under_any_name_is_refused(repo_root, tmp_path, capsys):
    params = params_with(repo_root, tmp_path, base_url=f"https://gateway.example/v1?key={KEY}")
    assert main(["plan", "--params", str(params), "--out-dir", str(tmp_path / "plan")]) == 2
    err = capsys.readouterr().err
    assert "models.gpt-4o.base_url" in err and KEY not in err


def test_a_credential_in_an_override_is_refused(repo_root, tmp_path, capsys):
    assert main(["plan", "--params", str(repo_root / "params.yaml"), "--out-dir", str(tmp_path / "plan"),
                 f"models.gpt-4o.api_key={KEY}"]) == 2
    err = capsys.readouterr().err
    assert "overrides: models.gpt-4o.api_key" in err and KEY not in err
    with pytest.raises(ConfigError, match="api_key_env"):
        load_params(repo_root / "params.yaml", [f"models.tiny.token={KEY}"])


def test_the_real_params_and_env_var_names_pass(repo_root):
    cfg = load_params(repo_root / "params.yaml")
    assert find_secrets(OmegaConf.to_container(cfg)) == []
    assert find_secrets({"m": {"api_key_env": "OPENAI_API_KEY", "max_new_tokens": 8, "api_key": None}}) == []


def _b64_echoes(secret: str) -> list[str]:
    out = []
    for prefix in ("", "a", "ab"):
        out.append(base64.b64encode(f"{prefix}Bearer {secret} trailing".encode()).decode())
        out.append(base64.urlsafe_b64encode(f"{prefix}{secret}".encode()).decode())
    return out


def test_the_key_is_redacted_in_every_encoding_a_server_may_echo():
    redact = Redactor(KEY)
    echoes = {
        "raw": f"invalid key: Bearer {KEY}",
        "percent": "upstream said " + urllib.parse.quote(KEY, safe=""),
        "percent all": "".join(f"%{b:02X}" for b in KEY.encode()),
        "percent lower": "".join(f"%{b:02x}" for b in KEY.encode()),
        "json unicode": json.dumps(KEY).replace("-", "\\u002d"),
        "prefix": f"key {KEY[:9]}... is not valid",
        "percent prefix": urllib.parse.quote(KEY[:12], safe="").replace("-", "%2D"),
        **{f"base64 {i}": text for i, text in enumerate(_b64_echoes(KEY))},
    }
    for what, text in echoes.items():
        cleaned = redact(text)
        assert "***" in cleaned, what
        for n in (8, 12):  # no run of 8+ characters of the key survives, in any of the encodings
            assert KEY[:n] not in cleaned and urllib.parse.quote(KEY[:n], safe="") not in cleaned, what
        assert base64.b64encode(KEY.encode()).decode()[:12] not in cleaned, what
    assert redact("a short sk-proj prefix stays") == "a short sk-proj prefix stays"  # 7 chars: not a leak


PROBE_KEY = "sk-test-SECRET123456789"  # the probe: the server echoed the key without its prefix


def test_any_run_of_8_characters_of_the_key_is_masked_not_only_prefixes():
    redact = Redactor(PROBE_KEY)
    suffix = PROBE_KEY[len("sk-test-"):]  # SECRET123456789: all of the key's random part
    echoes = {
        "suffix": f"Yes. Your key {suffix} was used.",
        "middle": f"No. Key ...{PROBE_KEY[5:14]}... is near its quota.",
        "suffix percent": "key=" + "".join(f"%{b:02x}" for b in suffix.encode()),
        "suffix mixed": "key=SEC" + "".join(f"%{b:02X}" for b in b"RET12") + "\\u0033" + "456789",
        "suffix json": json.dumps(suffix).replace("E", "\\u0045"),
        "suffix base64": base64.b64encode(f"user:{suffix}".encode()).decode(),
        "suffix base64 url": base64.urlsafe_b64encode(f"ab{suffix}".encode()).decode(),
    }
    for what, text in echoes.items():
        cleaned = redact(text)
        assert "***" in cleaned, what
        for start in range(len(PROBE_KEY) - 7):  # no 8-character run of the key survives
            assert PROBE_KEY[start:start + 8] not in cleaned, (what, cleaned)
    assert redact(f"Yes. Your key {suffix} was used.") == "Yes. Your key *** was used."
    assert redact("SECRET1 and 23456789") == "SECRET1 and ***"  # 7 characters: not a leak; 8: masked
    assert redact("The answer is yes.") == "The answer is yes."


@pytest.mark.timeout(30)  # a hang guard: the time per character is measured by benchmarks/refusal_speed.py
def test_a_long_answer_with_a_long_key_is_redacted():
    redact = Redactor("sk-proj-" + "A1b2C3d4e5" * 16)  # 168 characters, like a project key
    text = "The answer is yes, because the image shows a consolidation. " * 530  # a 32,000-character answer
    assert redact(text) == text
    assert redact(text + "A1b2C3d4e5A1") == text + "***"



# --- credentials in URLs (issue 40, item 2) --------------------------------------------------------------------

URL_PASSWORD = "pa55-w0rd-Zq7x"


@pytest.mark.parametrize("url", [
    f"http://user:{URL_PASSWORD}@127.0.0.1:8000/v1",
    "http://token1234abcd@gateway.example/v1",  # a token as the user name
    "https://gateway.example/v1?api_key=abc123xyz",
    "https://gateway.example/v1?api-version=2024-06-01&key=abc123xyz",
    "https://gateway.example/v1?token=abc123xyz",
    "https://gateway.example/v1?access_token=abc123xyz",
    "https://x.blob.example/c?sv=2024&sig=abc123xyz",
])
def test_a_url_carrying_a_credential_is_a_secret(url):
    assert find_secrets({"models": {"api": {"base_url": url}}}) == ["models.api.base_url"]
    assert find_secrets({"note": f"the gateway is {url} today"}) == ["note"]  # a URL inside any text


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8000/v1", "https://api.openai.com/v1", "https://gateway.example/v1?api-version=2024-06-01",
    "https://generativelanguage.googleapis.com/v1beta/openai/", "mailto:someone@example.org",
])
def test_a_url_without_a_credential_is_not_a_secret(url):
    assert find_secrets({"models": {"api": {"base_url": url}}}) == []


def test_a_password_in_base_url_stops_the_command_before_any_work(repo_root, tmp_path, capsys):
    """The probe ran `models.X.base_url=http://user:password@127.0.0.1:PORT/v1` with exit 0: now exit 2, the key named,
    the password never printed, nothing written."""
    url = f"http://user:{URL_PASSWORD}@127.0.0.1:8000/v1"
    params = params_with(repo_root, tmp_path, base_url=url)
    out = tmp_path / "plan"
    assert main(["plan", "--params", str(params), "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert "models.gpt-4o.base_url" in err and "base_url_env" in err and URL_PASSWORD not in err and not out.exists()
    assert main(["plan", "--params", str(repo_root / "params.yaml"), "--out-dir", str(out),
                 f"models.gpt-4o.base_url={url}"]) == 2
    err = capsys.readouterr().err
    assert "overrides: models.gpt-4o.base_url" in err and URL_PASSWORD not in err and not out.exists()


def test_redact_urls_masks_userinfo_and_credential_query_values():
    from probmed.core.secrets import redact_urls

    text = (f"endpoint http://user:{URL_PASSWORD}@127.0.0.1:8000/v1 is unreachable; "
            "also https://gw.example/v1?api-version=2024&api_key=abc123xyz&sig=s1g and http://127.0.0.1:9/v1")
    cleaned = redact_urls(text)
    assert URL_PASSWORD not in cleaned and "user:" not in cleaned and "abc123xyz" not in cleaned and "s1g" not in cleaned
    assert "http://***@127.0.0.1:8000/v1" in cleaned and "api-version=2024" in cleaned and "http://127.0.0.1:9/v1" in cleaned
    assert redact_urls("no url here: user:pass") == "no url here: user:pass"


def test_the_credentials_of_a_url_are_redacted_as_a_key_is_including_basic_auths_base64():
    from probmed.core.secrets import url_secrets

    redact = Redactor(*url_secrets(f"http://user:{URL_PASSWORD}@127.0.0.1:8000/v1"))
    basic = base64.b64encode(f"user:{URL_PASSWORD}".encode()).decode()
    for text in (f"invalid credentials: Basic {basic}", f"password {URL_PASSWORD}",
                 "pw " + urllib.parse.quote(URL_PASSWORD, safe="").replace("-", "%2D"),
                 base64.b64encode(f"Authorization: Basic {basic}".encode()).decode()):
        cleaned = redact(text)
        assert URL_PASSWORD[:8] not in cleaned and basic[:12] not in cleaned and "***" in cleaned, (text, cleaned)
    short = Redactor(*url_secrets("http://u:pw@127.0.0.1:8000/v1"))  # shorter than 8: masked where it appears whole
    assert short("Basic " + base64.b64encode(b"u:pw").decode() + " pw") == "Basic *** ***"
    assert Redactor(*url_secrets("http://127.0.0.1:8000/v1"))("Yes.") == "Yes."
